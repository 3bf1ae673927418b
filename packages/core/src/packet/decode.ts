/**
 * DecodeFailure is what every whohas decoder returns instead of throwing: a typed reason plus a message a person can
 * act on, prefixed with the module that refused the bytes ("arp: ...").
 *
 * - `truncated`: the bytes end before a length the header promises.
 * - `malformed`: the bytes are long enough but break a rule of the protocol.
 * - `unsupported`: a valid frame of a variant whohas does not analyse (ARP over Token Ring, RARP, ...).
 * - `ignored`: not ARP and not an NDP neighbor message at all (other traffic a capture let through).
 */
export interface DecodeFailure {
  readonly ok: false;
  readonly reason: "truncated" | "malformed" | "unsupported" | "ignored";
  readonly message: string;
}

/** Decoded is a successful decode carrying its value. */
export interface Decoded<T> {
  readonly ok: true;
  readonly value: T;
}

/** DecodeResult is the outcome of every decoder: never an exception. */
export type DecodeResult<T> = Decoded<T> | DecodeFailure;

/** ok wraps a decoded value. */
export function ok<T>(value: T): Decoded<T> {
  return { ok: true, value };
}

/** truncated reports that `need` bytes were required at `offset` and fewer were there. */
export function truncated(module: string, what: string, need: number, have: number): DecodeFailure {
  return { ok: false, reason: "truncated", message: `${module}: ${what} needs ${need} bytes, only ${have} present` };
}

/** malformed reports a protocol rule the bytes break. */
export function malformed(module: string, message: string): DecodeFailure {
  return { ok: false, reason: "malformed", message: `${module}: ${message}` };
}

/** unsupported reports a well-formed frame that whohas does not analyse. */
export function unsupported(module: string, message: string): DecodeFailure {
  return { ok: false, reason: "unsupported", message: `${module}: ${message}` };
}

// Big-endian reads for decoders that have already checked their bounds. The `?? 0` only satisfies the type checker
// (noUncheckedIndexedAccess): callers never read past a length they checked.

/** u8 reads one byte. */
export function u8(b: Uint8Array, off: number): number {
  return b[off] ?? 0;
}

/** u16 reads a big-endian 16-bit number. */
export function u16(b: Uint8Array, off: number): number {
  return ((b[off] ?? 0) << 8) | (b[off + 1] ?? 0);
}

/** u32 reads a big-endian 32-bit number as a non-negative integer. */
export function u32(b: Uint8Array, off: number): number {
  return (((b[off] ?? 0) << 24) >>> 0) + (((b[off + 1] ?? 0) << 16) | ((b[off + 2] ?? 0) << 8) | (b[off + 3] ?? 0));
}

/** bytesEqual compares `len` bytes at two offsets. */
export function bytesEqual(a: Uint8Array, aOff: number, b: Uint8Array, bOff: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (a[aOff + i] !== b[bOff + i]) return false;
  return true;
}

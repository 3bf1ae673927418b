/**
 * A Lens tells the judge what it cannot learn from frames: the node a MAC belongs to, and whether a set of capture
 * points would have seen a MAC's reply (a node sees only its own replies; a client's capture sees all of them).
 */
export interface Lens {
  nodeOf(mac: string): string | null;
  /**
   * false when the lens knows no node at all (a capture file read offline): a MAC without a node is then just a MAC,
   * not one shown to belong to no node.
   */
  readonly knowsNodes?: boolean;
  watches(mac: string, points: Iterable<string>): boolean;
  /** The organisation the IEEE registered a MAC's prefix to (null: not registered, or locally administered). */
  vendorOf?(mac: string): string | null;
  /**
   * Whether the request of `asker` (an address, or the MAC of a request's aggregate) for `ip` at `t` is one whohas
   * sent itself (a probe): its answers tell who answers, but it is no client's and counts in no client statistics.
   */
  ownRequest?(ip: string, asker: string, t: number): boolean;
}

/**
 * name is how a finding names a MAC: its node; else the MAC, said to be no node of the cluster, with the vendor its
 * prefix is registered to when the lens knows one ("00:1b:21:00:00:2a (Intel Corporate, not a cluster node)"). A lens
 * that knows no node (offline) names the MAC alone, with its vendor if known: nothing says whose it is.
 */
export function name(mac: string, lens: Lens): string {
  const node = lens.nodeOf(mac);
  if (node !== null) return node;
  const vendor = lens.vendorOf?.(mac) ?? null;
  if (lens.knowsNodes === false) return vendor === null ? mac : `${mac} (${vendor})`;
  return `${mac} (${vendor === null ? "" : `${vendor}, `}not a cluster node)`;
}

/** names lists MACs as a sentence does: "a and b", "a, b and c". */
export function names(macs: readonly string[], lens: Lens): string {
  const list = macs.map((m) => name(m, lens));
  return list.length <= 2 ? list.join(" and ") : `${list.slice(0, -1).join(", ")} and ${list[list.length - 1] ?? ""}`;
}

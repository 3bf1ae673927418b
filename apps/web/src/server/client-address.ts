import type { IncomingMessage } from "node:http";
import { timingSafeEqual } from "node:crypto";
import { BlockList, isIPv4, isIPv6 } from "node:net";

/**
 * A hub replica on standby passes requests to the leader with the replicas' shared key (REPLICA_HEADER, kept in the
 * shared database) and the address its own peer had (REPLICA_PEER_HEADER): the leader then judges the request as if
 * that peer had connected to it directly (its limits, trusted proxies, audit). Without the key the headers count for
 * nothing.
 */
export const REPLICA_HEADER = "x-whohas-replica";
export const REPLICA_PEER_HEADER = "x-whohas-replica-peer";
let replicaKey: Buffer | null = null;
/** The addresses replicas' requests came from: their connections are counted per client, by the replica. */
const replicaAddresses = new Set<string>();

/** trustReplicas sets the replicas' shared key this process accepts (null: none, a hub without replicas). */
export function trustReplicas(key: string | null): void {
  replicaKey = key === null ? null : Buffer.from(key);
}

/** vouchedByReplica tells whether a request carries the replicas' key: `key`, or the one this process trusts. */
export function vouchedByReplica(req: IncomingMessage, key: string | null = null): boolean {
  const want = key === null ? replicaKey : Buffer.from(key);
  const given = req.headers[REPLICA_HEADER];
  if (want === null || typeof given !== "string") return false;
  const g = Buffer.from(given);
  return g.length === want.length && timingSafeEqual(g, want);
}

/** isReplicaAddress tells whether requests from `addr` came with the replicas' key (a standby passing them on). */
export function isReplicaAddress(addr: string): boolean {
  return replicaAddresses.has(addr);
}

/** fromReplica returns the client's address a replica vouches for, or null when the request carries no valid key. */
function fromReplica(req: IncomingMessage): string | null {
  const peer = req.headers[REPLICA_PEER_HEADER];
  if (typeof peer !== "string" || !vouchedByReplica(req)) return null;
  if (replicaAddresses.size < 1000) replicaAddresses.add(normalisePeer(req.socket.remoteAddress ?? "unix"));
  return peer === "unix" || isIPv4(peer) || isIPv6(peer) ? peer : null;
}

const normalisePeer = (a: string) => (a.startsWith("::ffff:") && isIPv4(a.slice(7)) ? a.slice(7) : a);

/** peerAddress is the socket's peer, IPv4-mapped IPv6 written as IPv4 ("unix" on the lab's Unix socket); through a replica, its peer. */
export function peerAddress(req: IncomingMessage): string {
  return normalisePeer(fromReplica(req) ?? req.socket.remoteAddress ?? "unix");
}

/**
 * limitKey is what a rate limit counts a client address as: an IPv4 address itself, an IPv6 address by its /64 (one
 * subscriber's network holds 2^64 addresses, each of which would otherwise start with a full allowance).
 */
export function limitKey(addr: string): string {
  if (!isIPv6(addr)) return addr;
  const [head = "", tail] = addr.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => (parseInt(g, 16) || 0).toString(16))
    .join(":")}::/64`;
}

/** trustList builds an allow list of addresses and CIDRs; throws naming the entry that is neither. */
export function trustList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const e of entries) {
    const [addr = "", bits] = e.split("/");
    const type = isIPv4(addr) ? "ipv4" : isIPv6(addr) ? "ipv6" : null;
    const prefix = bits === undefined ? (type === "ipv4" ? 32 : 128) : Number(bits);
    if (type === null || !Number.isInteger(prefix) || prefix < 0 || prefix > (type === "ipv4" ? 32 : 128))
      throw new Error(`"${e}" is not an address or CIDR`);
    list.addSubnet(addr, prefix, type);
  }
  return list;
}

function listed(list: BlockList, addr: string): boolean {
  const type = isIPv4(addr) ? "ipv4" : isIPv6(addr) ? "ipv6" : null;
  return type !== null && list.check(addr, type);
}

/**
 * ClientAddresses tells who a request really comes from. Behind an ingress or load balancer every request has the
 * proxy's address, so a limit per socket address would let one client lock everyone out. When the peer is one of
 * the trusted proxies, the client is the rightmost X-Forwarded-For entry that is not itself a trusted proxy (entries
 * to its left are whatever the client chose to send); from anywhere else the header is ignored.
 */
export class ClientAddresses {
  readonly #trusted: BlockList | null;

  constructor(trustedProxies: readonly string[]) {
    this.#trusted = trustedProxies.length === 0 ? null : trustList(trustedProxies);
  }

  /** trusted says whether the request's peer is a trusted proxy (its forwarding headers may be read). */
  trusted(req: IncomingMessage): boolean {
    return this.isProxy(peerAddress(req));
  }

  /** isProxy says whether `addr` is a trusted proxy's. */
  isProxy(addr: string): boolean {
    return this.#trusted !== null && listed(this.#trusted, addr);
  }

  /** of returns the client's address. */
  of(req: IncomingMessage): string {
    const peer = peerAddress(req);
    if (this.#trusted === null || !listed(this.#trusted, peer)) return peer;
    const header = req.headers["x-forwarded-for"];
    const hops = (Array.isArray(header) ? header.join(",") : (header ?? ""))
      .split(",")
      .map((h) => h.trim())
      .filter((h) => h !== "");
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalise(hops[i] ?? "");
      if (hop === null) return peer;
      if (!listed(this.#trusted, hop)) return hop;
    }
    return peer;
  }
}

/** normalise reads one X-Forwarded-For entry (an address, maybe bracketed or with a port); null when it is none. */
function normalise(hop: string): string | null {
  let h = hop;
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(h);
  if (bracket?.[1] !== undefined) h = bracket[1];
  else if (/^[\d.]+:\d+$/.test(h)) h = h.slice(0, h.lastIndexOf(":"));
  if (h.startsWith("::ffff:") && isIPv4(h.slice(7))) h = h.slice(7);
  return isIPv4(h) || isIPv6(h) ? h : null;
}

import { networkInterfaces, type NetworkInterfaceInfo } from "node:os";
import {
  GRATUITOUS_TICK_MS,
  GratuitousScheduler,
  ProbeSession,
  classifyFrame,
  gratuitousFrames,
  isIPv4,
  newArpRequest,
  newNeighborSolicitation,
  parseIPv4,
  parseIPv6,
  type ProbeRequestResult,
  type ProbeSummary,
} from "@whohas/core";
import type { PacketSource } from "@whohas/capture";
import { readVlanLinks } from "./capture/interfaces.js";

/** An Egress is where a command sends from: an interface, its MAC and this node's address on it. */
export interface Egress {
  readonly iface: string;
  readonly mac: string;
  readonly address: string;
  /** The interface's IPv6 link-local address (NDP answers and announcements come from it). */
  readonly linkLocal: string | null;
}

function sameSubnet(ip: string, addr: string, cidr: number, v4: boolean): boolean {
  const a = v4 ? parseIPv4(ip) : parseIPv6(ip);
  const b = v4 ? parseIPv4(addr) : parseIPv6(addr);
  if (a === null || b === null) return false;
  for (let bit = 0; bit < cidr; bit++) {
    const i = bit >> 3;
    const m = 0x80 >> (bit & 7);
    if (((a[i] ?? 0) & m) !== ((b[i] ?? 0) & m)) return false;
  }
  return true;
}

/** vlanDevices is the node's VLAN devices and their ids (readVlanLinks): name -> VLAN id. */
export function vlanDevices(path = "/proc/net/vlan/config"): Map<string, number> {
  return new Map([...readVlanLinks(path)].map(([name, v]) => [name, v.id]));
}

/**
 * egressFor picks the interface that carries traffic for `ip`: the one with an address in the same subnet (as a
 * router would send there), or the named one. With a VLAN, only the node's devices on that VLAN qualify (a named one
 * too); without, plain interfaces come first and a VLAN device only when none has the subnet. Throws with a message
 * a person can act on.
 */
export function egressFor(
  ip: string,
  named?: string,
  vlan: number | null = null,
  vlans: ReadonlyMap<string, number> = vlanDevices(),
  ifs: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces(),
): Egress {
  const v4 = isIPv4(ip);
  const all = Object.entries(ifs);
  if (named !== undefined) {
    const one = all.filter(([name]) => name === named);
    if (one.length === 0) throw new Error(`--interface ${named}: no such interface with an address`);
    if (vlan !== null && vlans.get(named) !== vlan)
      throw new Error(`--interface ${named} is not on VLAN ${vlan} (no VLAN device with that id): it would ask untagged`);
    const found = pick(ip, v4, one, true);
    if (found === null)
      throw new Error(`--interface ${named} has no ${v4 ? "IPv4 address" : "IPv6 address (link-local ones aside)"} to send from`);
    return found;
  }
  if (vlan !== null) {
    const onVlan = all.filter(([name]) => vlans.get(name) === vlan);
    if (onVlan.length === 0)
      throw new Error(
        `this node has no interface on VLAN ${vlan} (no VLAN device with id ${vlan} in /proc/net/vlan/config), so it cannot reach ${ip} there; name one with --interface`,
      );
    return pick(ip, v4, onVlan, false) ?? noSubnet(ip, v4, ` on VLAN ${vlan} (${onVlan.map(([n]) => n).join(", ")})`);
  }
  return (
    pick(
      ip,
      v4,
      all.filter(([name]) => !vlans.has(name)),
      false,
    ) ??
    pick(
      ip,
      v4,
      all.filter(([name]) => vlans.has(name)),
      false,
    ) ??
    noSubnet(ip, v4, "")
  );
}

/** pick is the first interface with an address of `ip`'s family in its subnet (any address of it when `any`). */
function pick(ip: string, v4: boolean, candidates: [string, NetworkInterfaceInfo[] | undefined][], any: boolean): Egress | null {
  for (const [name, addrs] of candidates) {
    for (const a of addrs ?? []) {
      if (a.internal || (a.family === "IPv4") !== v4) continue;
      if (!v4 && a.address.startsWith("fe80:")) continue;
      const cidr = Number(a.cidr?.split("/")[1] ?? (v4 ? 32 : 128));
      if (any || sameSubnet(ip, a.address, cidr, v4)) {
        const linkLocal = (addrs ?? []).find((x) => x.family === "IPv6" && x.address.startsWith("fe80:"))?.address ?? null;
        return { iface: name, mac: a.mac, address: a.address, linkLocal };
      }
    }
  }
  return null;
}

function noSubnet(ip: string, v4: boolean, where: string): never {
  throw new Error(`no interface${where} has an ${v4 ? "IPv4" : "IPv6"} address in the subnet of ${ip}; name one with --interface`);
}

/** A Clock lets tests drive time; the agent uses the real one. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** CommandIo is what a hub command reaches the network through: the node's interfaces, a capture that sends, time. */
export interface CommandIo {
  /** Where to send from for an IP on a VLAN (null: untagged); throws, saying why, when this node has no such link. */
  readonly egress: (ip: string, vlan: number | null) => Egress;
  readonly open: (iface: string) => PacketSource;
  readonly clock?: Clock;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      // Whichever comes first, the timer or the abort, removes the other: a 60 s probe sleeps 60 times.
      const onAbort = () => {
        clearTimeout(t);
        resolve();
      };
      const t = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

export interface ProbeOptions {
  readonly ip: string;
  readonly durationMs: number;
  readonly intervalMs: number;
  readonly egress: Egress;
  /** Opens a capture that can also send, on the egress interface. */
  readonly open: (iface: string) => PacketSource;
  readonly clock?: Clock;
  readonly signal?: AbortSignal;
  /** Called with each request's result once the next request goes out (and for the last one at the end). */
  readonly onResult?: (r: ProbeRequestResult) => void;
}

/**
 * runProbe broadcasts a request for the IP every interval (ARP, or NS for IPv6) and counts every MAC that answers
 * each one. Every request is broadcast: switching to unicast after the first reply, as iputils arping does, would
 * hide the other responders.
 */
export async function runProbe(o: ProbeOptions): Promise<ProbeSummary> {
  const clock = o.clock ?? realClock;
  const v4 = isIPv4(o.ip);
  const session = new ProbeSession(o.ip, o.intervalMs);
  const src = o.open(o.egress.iface);
  src.start((frame, now) => {
    const out = classifyFrame(frame);
    if (out.kind !== "observed") return;
    const obs = out.obs;
    const answers = v4 ? obs.kind === "reply" && obs.peerIp === o.egress.address : obs.kind === "na-solicited";
    if (answers && obs.ip === o.ip) session.reply(obs.mac, now);
  });
  const frame = v4 ? newArpRequest(o.egress.mac, o.egress.address, o.ip) : newNeighborSolicitation(o.egress.mac, o.egress.address, o.ip);
  const end = clock.now() + o.durationMs;
  let last: number | null = null;
  try {
    while (clock.now() < end && o.signal?.aborted !== true) {
      if (last !== null) report(last);
      last = session.request(clock.now());
      src.send(frame);
      await clock.sleep(o.intervalMs, o.signal);
    }
    if (last !== null) report(last);
  } finally {
    src.close();
  }
  return session.summary();

  function report(seq: number): void {
    const r = session.result(seq);
    if (r !== null) o.onResult?.(r);
  }
}

export interface AnnounceOptions {
  readonly ip: string;
  readonly durationMs: number;
  readonly egress: Egress;
  readonly open: (iface: string) => PacketSource;
  readonly clock?: Clock;
  readonly signal?: AbortSignal;
}

/**
 * runAnnounce sends MetalLB's gratuitous bursts for the IP from this node's MAC: the IP is (re)set every second for
 * `durationMs`, as each SetBalancer would, and the scheduler's 1.1 s ticker sends until 5 s after the last set.
 * Returns the number of bursts sent.
 */
export async function runAnnounce(o: AnnounceOptions): Promise<number> {
  const clock = o.clock ?? realClock;
  const sched = new GratuitousScheduler();
  const frames = gratuitousFrames({ name: o.egress.iface, mac: o.egress.mac, linkLocal: o.egress.linkLocal }, o.ip);
  // MetalLB sends its NAs from the link-local address; without one there is nothing to send, so no capture opens.
  if (frames.length === 0) throw new Error(`${o.egress.iface} has no IPv6 link-local address to announce ${o.ip} from`);
  const src = o.open(o.egress.iface);
  src.start(() => undefined);
  let bursts = 0;
  const burst = () => {
    for (const f of frames) src.send(f);
    bursts++;
  };
  const start = clock.now();
  const stopSetting = start + o.durationMs;
  let nextSet = start;
  let nextTick = start + GRATUITOUS_TICK_MS;
  try {
    for (;;) {
      if (o.signal?.aborted === true) break;
      const now = clock.now();
      if (now >= nextSet && now < stopSetting) {
        if (sched.set(o.ip, now)) burst();
        nextSet += 1000;
      }
      if (now >= nextTick) {
        if (sched.tick(now).includes(o.ip)) burst();
        else if (now >= stopSetting) break;
        nextTick += GRATUITOUS_TICK_MS;
      }
      const wake = Math.min(nextTick, nextSet < stopSetting ? nextSet : Infinity);
      await clock.sleep(Math.max(0, wake - clock.now()), o.signal);
    }
  } finally {
    src.close();
  }
  return bursts;
}

/** parseDuration reads "60s", "1500ms", "2m" or plain milliseconds. */
export function parseDuration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m)?$/.exec(s.trim());
  if (m === null) throw new Error(`not a duration: ${JSON.stringify(s)} (try 60s)`);
  const n = Number(m[1]);
  return Math.round(m[2] === "s" ? n * 1000 : m[2] === "m" ? n * 60_000 : n);
}

import {
  LINKTYPE_ETHERNET,
  MAX_PROBE_REPLIES,
  MAX_PROBE_TARGETS,
  ProbeBatch,
  WIRE_VERSION,
  decodeFrame,
  formatIPv4Number,
  formatMacNumber,
  isIPv4,
  newArpRequest,
  newFrameFields,
  newNeighborSolicitation,
  normalizeIpKey,
  type HubMessage,
  type ProbeReply,
} from "@whohas/core";
import type { PacketSource } from "@whohas/capture";
import { realClock, type CommandIo, type Egress } from "./commands.js";
import type { HubLink } from "./hub-link.js";

export type ProbeManyCommand = Extract<HubMessage, { type: "probe-many" }>;

/** A ProbeManyTarget is one IP to ask, in a VLAN (null: untagged). */
export interface ProbeManyTarget {
  readonly ip: string;
  readonly vlan: number | null;
}

/** A TargetResult is what one request for one target got back, as probe-many-result carries it. */
export interface TargetResult extends ProbeManyTarget {
  readonly sentAt: number;
  readonly replies: ProbeReply[];
}

/** ProbeManyOptions: what to ask, and the node's interfaces, captures and clock to ask it through (CommandIo). */
export interface ProbeManyOptions extends CommandIo {
  readonly targets: readonly ProbeManyTarget[];
  readonly rounds: number;
  readonly intervalMs: number;
  readonly signal?: AbortSignal;
  /** Each round once its replies are in: one result per target asked, in the targets' order. */
  readonly onRound: (seq: number, results: TargetResult[]) => void;
}

/** A ProbeManyOutcome says what a probe of many IPs asked: how many, from which interfaces, and what it could not ask. */
export interface ProbeManyOutcome {
  readonly probed: number;
  readonly ifaces: readonly string[];
  readonly unprobed: readonly (ProbeManyTarget & { readonly message: string })[];
}

interface Asked {
  readonly target: ProbeManyTarget;
  readonly egress: Egress;
  readonly frame: Uint8Array;
}

/**
 * runProbeMany asks many IPs at once, as core's ProbeBatch schedules it: one broadcast request per IP a round (ARP,
 * or an NS to the solicited-node group for IPv6, from the interface egressFor picks, a VLAN's device for a VLAN),
 * the IPs' requests spread over each interval, every reply MAC counted per request. One capture per interface serves
 * every IP asked from it. A target this node cannot reach is left out and named in the outcome.
 */
export async function runProbeMany(o: ProbeManyOptions): Promise<ProbeManyOutcome> {
  const clock = o.clock ?? realClock;
  const asked: Asked[] = [];
  const unprobed: (ProbeManyTarget & { message: string })[] = [];
  // The target first asked per interface and address: egressFor may pick a VLAN's device for an IP named untagged, so
  // two targets that differ in text or VLAN can be one IP on one link, which must not be asked twice a second.
  const first = new Map<string, ProbeManyTarget>();
  for (const target of o.targets) {
    try {
      const egress = o.egress(target.ip, target.vlan);
      const at = `${egress.iface} ${normalizeIpKey(target.ip) ?? target.ip}`;
      const before = first.get(at);
      if (before !== undefined) {
        const named = `${before.ip}${before.vlan === null ? "" : ` on VLAN ${before.vlan}`}`;
        unprobed.push({ ...target, message: `asked already as ${named} from ${egress.iface}: one request a second per IP on a link` });
        continue;
      }
      first.set(at, target);
      const frame = isIPv4(target.ip)
        ? newArpRequest(egress.mac, egress.address, target.ip)
        : newNeighborSolicitation(egress.mac, egress.address, target.ip);
      asked.push({ target, egress, frame });
    } catch (e) {
      unprobed.push({ ...target, message: (e as Error).message.slice(0, 300) });
    }
  }
  if (asked.length === 0) return { probed: 0, ifaces: [], unprobed };
  // Per interface, the index of each IP asked from it: an answer is matched by where it came in and what it is for.
  const byIface = new Map<string, Map<string, number>>();
  asked.forEach((a, i) => {
    const ips = byIface.get(a.egress.iface) ?? new Map<string, number>();
    ips.set(normalizeIpKey(a.target.ip) ?? a.target.ip, i);
    byIface.set(a.egress.iface, ips);
  });
  let batch: ProbeBatch | null = null;
  const sources = new Map<string, PacketSource>();
  try {
    for (const [iface, ips] of byIface) {
      const src = o.open(iface);
      sources.set(iface, src);
      const fields = newFrameFields();
      src.start((frame, now) => {
        if (decodeFrame(frame, LINKTYPE_ETHERNET, fields) !== null) return;
        // An ARP reply to this node's address on the interface, or a solicited NA: an answer to one of our requests.
        const v4 = fields.family === 4;
        if (v4 ? fields.kind !== "reply" : fields.kind !== "na-solicited") return;
        const i = ips.get(v4 ? formatIPv4Number(fields.ip4) : fields.ip6);
        if (i === undefined) return;
        if (v4 && formatIPv4Number(fields.peer4) !== asked[i]?.egress.address) return;
        batch?.reply(i, formatMacNumber(fields.mac), now);
      });
    }
    // The plan starts once the captures are open: opening them is no part of the first round.
    batch = new ProbeBatch(
      asked.map((a) => a.target.ip),
      o.rounds,
      o.intervalMs,
      clock.now(),
    );
    while (!batch.done && o.signal?.aborted !== true) {
      for (let due = batch.next(); due !== null && clock.now() >= due.at; due = batch.next()) {
        const a = asked[due.target];
        if (a !== undefined) sources.get(a.egress.iface)?.send(a.frame);
        // Read after sending: a send held up by the scheduler only widens the gap to this IP's next request.
        batch.sent(clock.now());
      }
      for (const round of batch.closed(clock.now()))
        o.onRound(
          round.seq,
          round.results.map((r, i) => ({
            ip: asked[i]?.target.ip ?? "",
            vlan: asked[i]?.target.vlan ?? null,
            sentAt: Math.round(r.sentAt),
            replies: r.replies.slice(0, MAX_PROBE_REPLIES),
          })),
        );
      const wake = batch.wake();
      if (wake === null) break;
      await clock.sleep(Math.max(0, wake - clock.now()), o.signal);
    }
  } finally {
    for (const src of sources.values()) src.close();
  }
  return { probed: asked.length, ifaces: [...sources.keys()], unprobed };
}

/**
 * probeManyCommand runs a probe-many from the hub: refused (command-done, ok false) above MAX_PROBE_TARGETS, the
 * limit this agent's hello names; else each round streams as a probe-many-result and command-done ends it, naming
 * the IPs this node could not ask (no interface on their network, or the same IP on the same link named again).
 */
export async function probeManyCommand(msg: ProbeManyCommand, send: HubLink["send"], io: CommandIo): Promise<void> {
  const done = (ok: boolean, message: string, unprobed: ProbeManyOutcome["unprobed"] = []) =>
    send({
      v: WIRE_VERSION,
      type: "command-done",
      id: msg.id,
      ok,
      message,
      ...(unprobed.length > 0 ? { unprobed: [...unprobed] } : {}),
    });
  const n = msg.targets.length;
  if (n > MAX_PROBE_TARGETS)
    return void done(false, `refused: ${n} IPs in one probe, this agent asks at most ${MAX_PROBE_TARGETS} at once (split them)`);
  const out = await runProbeMany({
    targets: msg.targets,
    rounds: msg.rounds,
    intervalMs: msg.intervalMs,
    ...io,
    onRound: (seq, results) => send({ v: WIRE_VERSION, type: "probe-many-result", id: msg.id, seq, results }),
  });
  if (out.probed === 0)
    return void done(false, `asked none of ${n} IPs: ${out.unprobed[0]?.message ?? "no interface to ask from"}`, out.unprobed);
  const left =
    out.unprobed.length > 0
      ? `; ${out.unprobed.length} not asked (${out.unprobed[0]?.message ?? ""}${out.unprobed.length > 1 ? "; …" : ""})`
      : "";
  done(true, `probed ${out.probed} IPs from ${out.ifaces.join(", ")}, ${msg.rounds} requests each${left}`, out.unprobed);
}

import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import {
  ProbeRounds,
  WIRE_VERSION,
  chooseProbers,
  type AgentMessage,
  type CommandResult,
  type Logger,
  type ProbeRound,
  type ProbeSummary,
  normalizeIpKey,
} from "@whohas/core";
import type { Hub } from "../hub/hub.js";
import { ActionRefused, commandDone, onLink, type CommandSender } from "./command.js";
import { probeAll, type ProbedIp } from "./probe-all.js";

/**
 * PROBERS: a node never hears its own answer to its own broadcast, so the hub probes from two (each hears the other):
 * the expected owner and a node that captured the IP (core's chooseProbers).
 */
const PROBERS = 2;
/** PROBE_INTERVAL_MS: one request a second, as operators probe by hand. */
const PROBE_INTERVAL_MS = 1000;
/** COMMAND_GRACE_MS: how long after its planned end an agent may take to report a command done. */
const COMMAND_GRACE_MS = 15_000;
/** MAX_RUNNING_PROBES bounds probes at once (each sends a broadcast a second from two nodes). */
const MAX_RUNNING_PROBES = 8;
/** AUDITED_IPS: the IPs a probe of many's audit entry names (the count says how many there were). */
const AUDITED_IPS = 20;
/** KEEP_FINISHED_MS: how long a finished probe stays readable (a page reloaded after it ended still shows it). */
const KEEP_FINISHED_MS = 15 * 60_000;

type Reply = ProbeRound["replies"][number] & { readonly node: string | null };

/** A ProbeRunView is a probe as the dashboard shows it while it runs and after. */
export interface ProbeRunView {
  readonly id: string;
  readonly ip: string;
  readonly by: string;
  readonly probers: readonly string[];
  readonly startedAt: number;
  readonly durationMs: number;
  readonly state: "running" | "done" | "failed";
  /** One round per second: the union of what every prober heard for that request number. */
  readonly rounds: readonly (Omit<ProbeRound, "replies"> & { readonly replies: readonly Reply[] })[];
  readonly summary:
    (Omit<ProbeSummary, "macs"> & { readonly macs: readonly (ProbeSummary["macs"][number] & { readonly node: string | null })[] }) | null;
  /** Each prober's outcome, as its agent reported it. */
  readonly messages: readonly string[];
  /** The probers that failed or never reported: what they would have heard is missing from the rounds. */
  readonly failedProbers: readonly string[];
  /** Bumped on every change (the subscription's event id). */
  readonly version: number;
}

interface ProbeRun {
  readonly id: string;
  readonly ip: string;
  readonly by: string;
  readonly probers: string[];
  readonly startedAt: number;
  readonly durationMs: number;
  readonly rounds: ProbeRounds;
  readonly pending: Set<string>;
  readonly messages: string[];
  readonly failed: Set<string>;
  version: number;
  endedAt: number | null;
  timer: NodeJS.Timeout | null;
}

export interface ActionsOptions {
  readonly hub: Hub;
  readonly agents: CommandSender;
  readonly logger: Logger;
  readonly probeMs: number;
  readonly announceMs: number;
  /** Draws probers ([0, 1)); Math.random unless a test fixes it. */
  readonly random?: () => number;
}

/**
 * Actions runs what the dashboard's operators ask of the network: Force re-announce (on the expected owner only)
 * and Probe (from two nodes, merged per request by core's ProbeRounds). Every action is audited with its user,
 * input and outcome, refusals included.
 */
export class Actions {
  readonly #runs = new Map<string, ProbeRun>();
  /** Re-announcements whose agent has not reported back yet. */
  #announcing = 0;
  /** Probes of many IPs at once (the strictARP fix's verification) still running. */
  #probingAll = 0;
  /** The IP keys (normalized) a probeAll is asking now, with how many probeAll runs ask each. */
  readonly #verifying = new Map<string, number>();
  readonly #events = new EventEmitter<{ change: [string] }>();

  constructor(readonly o: ActionsOptions) {
    this.#events.setMaxListeners(0);
  }

  async #audit(actor: string, action: string, input: unknown, outcome: "ok" | "refused" | "failed", detail: string): Promise<void> {
    await this.o.hub.store.audit.append({ t: this.o.hub.clock(), actor, action, input, outcome, detail });
    this.o.logger.info("action", { actor, action, input, outcome, detail });
  }

  /** #upAgents names the nodes whose agents are connected now. */
  #upAgents(): string[] {
    return this.o.hub.agents
      .list()
      .filter((a) => a.up && a.connected)
      .map((a) => a.node)
      .sort();
  }

  /**
   * reannounce makes the IP's expected owner send MetalLB's gratuitous announcements, so switches and clients
   * holding a stale MAC learn the right one. Refused (and audited) when the owner is unknown or its agent is away:
   * announcing from any other node would create the very conflict whohas looks for.
   */
  async reannounce(ip: string, actor: string): Promise<{ node: string; bursts: number; message: string }> {
    const input = { ip };
    const view = this.o.hub.ip(ip);
    const owner = view?.expectedOwner?.node ?? null;
    if (view?.announcer === "metallb-bgp" || owner === null) {
      // Announcing from a guessed node would pull traffic to the wrong place: refused, with what whohas does know.
      const message =
        view?.announcer === "metallb-bgp"
          ? `${ip} is advertised by MetalLB over BGP, not ARP: routers carry it, and gratuitous ARP would only make a node answer for it`
          : view === null || view.services.length === 0
            ? `whohas does not know which node should own ${ip}: no LoadBalancer Service has it (the hub needs Kubernetes access to name the owner)`
            : `whohas does not know which node should own ${ip}: ${view.ownerUnknown ?? "no announcer recognised"}`;
      await this.#audit(actor, "ip.reannounce", input, "refused", message);
      throw new ActionRefused(message);
    }
    let m: Extract<AgentMessage, { type: "command-done" }>;
    this.#announcing++;
    try {
      m = await commandDone(
        this.o.agents,
        owner,
        (id) => ({
          v: WIRE_VERSION,
          type: "announce",
          id,
          ...onLink(ip),
          durationMs: this.o.announceMs,
          expectedOwner: owner,
          force: false,
        }),
        this.o.announceMs + COMMAND_GRACE_MS,
        `no agent is connected on ${owner}, the node that should own ${ip}: check the whohas agent pod there`,
      );
    } catch (e) {
      await this.#audit(
        actor,
        "ip.reannounce",
        { ...input, node: owner },
        e instanceof ActionRefused ? "refused" : "failed",
        (e as Error).message,
      );
      throw e;
    } finally {
      this.#announcing--;
    }
    await this.#audit(actor, "ip.reannounce", { ...input, node: owner }, m.ok ? "ok" : "failed", m.message);
    if (!m.ok) throw new Error(`${owner}: ${m.message}`);
    return { node: owner, bursts: m.bursts ?? 0, message: m.message };
  }

  /** busy tells whether an operator's probe or re-announcement (the strictARP fix's included) is running. */
  get busy(): boolean {
    if (this.#announcing > 0 || this.#probingAll > 0) return true;
    for (const r of this.#runs.values()) if (r.endedAt === null) return true;
    return false;
  }

  /**
   * probe asks who has the IP once a second for the configured time, from two nodes at once, and returns the run's
   * id; `view` and `changes` follow it. A probe of an IP that is already being probed joins that run.
   */
  async probe(ip: string, actor: string): Promise<string> {
    for (const r of this.#runs.values()) if (r.ip === ip && r.endedAt === null) return r.id;
    // A probe beside the verification's would ask the IP twice a second from one node, and each would credit the
    // other's replies: refused, not joined, since the verification's rounds are no run the dashboard can follow.
    if (this.#verifying.has(normalizeIpKey(ip) ?? ip)) {
      const message = `${ip} is being verified by the strictARP fix's run; try again when it ends`;
      await this.#audit(actor, "ip.probe", { ip }, "refused", message);
      throw new ActionRefused(message);
    }
    // A probe of many (the verification's) counts as one probe running.
    const running = [...this.#runs.values()].filter((r) => r.endedAt === null).length + this.#probingAll;
    if (running >= MAX_RUNNING_PROBES) {
      const message = `${running} probes are running already (at most ${MAX_RUNNING_PROBES}): wait for one to finish`;
      await this.#audit(actor, "ip.probe", { ip }, "refused", message);
      throw new ActionRefused(message);
    }
    const view = this.o.hub.ip(ip);
    const probers = chooseProbers({
      up: this.#upAgents(),
      owner: view?.expectedOwner?.node ?? null,
      capturedBy: view?.capturedBy ?? [],
      n: PROBERS,
      random: this.o.random ?? Math.random,
    });
    if (probers.length === 0) {
      const message = "no agent is connected: deploy the whohas agent DaemonSet, then probe again";
      await this.#audit(actor, "ip.probe", { ip }, "refused", message);
      throw new ActionRefused(message);
    }
    this.#prune();
    const run: ProbeRun = {
      id: randomUUID(),
      ip,
      by: actor,
      probers: [],
      startedAt: this.o.hub.clock(),
      durationMs: this.o.probeMs,
      rounds: new ProbeRounds(ip),
      pending: new Set(),
      messages:
        probers.length < PROBERS
          ? [`only ${probers[0] ?? ""} has an agent connected: its own answers cannot be heard (a node does not hear itself)`]
          : [],
      failed: new Set<string>(),
      version: 1,
      endedAt: null,
      timer: null,
    };
    this.#runs.set(run.id, run);
    for (const [i, node] of probers.entries()) {
      // Its requests are no client's: the judge counts who answers them, and nothing else.
      this.o.hub.traffic.own.expect(ip, this.o.hub.agents.askersOf(node), run.startedAt, this.o.probeMs);
      const sent = this.o.agents.command(
        node,
        { v: WIRE_VERSION, type: "probe", id: `${run.id}#${i}`, ...onLink(ip), durationMs: this.o.probeMs, intervalMs: PROBE_INTERVAL_MS },
        (m) => this.#onResult(run, node, m),
      );
      if (sent) {
        run.probers.push(node);
        run.pending.add(node);
      }
    }
    if (run.probers.length === 0) {
      this.#runs.delete(run.id);
      const message = "the agents went away as the probe started: try again";
      await this.#audit(actor, "ip.probe", { ip }, "failed", message);
      throw new ActionRefused(message);
    }
    run.timer = setTimeout(() => {
      for (const node of run.pending) {
        run.messages.push(`${node}: no report within ${Math.round(COMMAND_GRACE_MS / 1000)} s of the end (agent gone?)`);
        run.failed.add(node);
      }
      run.pending.clear();
      this.#finish(run);
    }, this.o.probeMs + COMMAND_GRACE_MS);
    run.timer.unref();
    await this.#audit(
      actor,
      "ip.probe",
      { ip, probers: run.probers, durationMs: this.o.probeMs },
      "ok",
      `started from ${run.probers.join(" and ")}`,
    );
    return run.id;
  }

  /**
   * probeAll asks every IP in `ips` at once, `rounds` requests each from two nodes (probe-all.ts), and resolves with
   * what each IP's probers heard; `done` gets each IP as it is through. The strictARP fix verifies with it. Audited
   * when it starts (a hub that stops midway still shows that requests went out) and when it ends; the background
   * probe waits meanwhile (busy), and an operator's probe of one of its IPs is refused. It counts as one of
   * MAX_RUNNING_PROBES but is never refused by it: it runs after the fix was applied, and refusing would leave the
   * fix unverified; its own load is bounded (one request per IP a second from each of two nodes).
   */
  async probeAll(
    ips: readonly string[],
    actor: string,
    rounds: number,
    say: (line: string) => void,
    done: (p: ProbedIp) => void,
  ): Promise<ProbedIp[]> {
    this.#probingAll++;
    const keys = ips.map((ip) => normalizeIpKey(ip) ?? ip);
    for (const k of keys) this.#verifying.set(k, (this.#verifying.get(k) ?? 0) + 1);
    const up = this.#upAgents();
    const input = { count: ips.length, ips: ips.slice(0, AUDITED_IPS), rounds, nodes: up };
    try {
      // Inside the try: an audit log that cannot be written must not leave the IPs marked as being verified.
      await this.#audit(
        actor,
        "ips.probe",
        input,
        "ok",
        `started: ${ips.length} IPs, ${rounds} requests each from two nodes of ${up.join(", ")}`,
      );
      const out = await probeAll({
        hub: this.o.hub,
        agents: this.o.agents,
        ips,
        rounds,
        up,
        random: this.o.random ?? Math.random,
        say,
        done,
      });
      const missing = out.filter((p) => p.failedProbers.length > 0).length;
      await this.#audit(
        actor,
        "ips.probe.result",
        input,
        "ok",
        `${ips.length} IPs, ${rounds} requests each from two nodes; ${missing === 0 ? "every prober reported" : `${missing} IPs with a prober missing`}`,
      );
      return out;
    } catch (e) {
      await this.#audit(actor, "ips.probe.result", input, "failed", (e as Error).message);
      throw e;
    } finally {
      this.#probingAll--;
      for (const k of keys) {
        const n = (this.#verifying.get(k) ?? 0) - 1;
        if (n > 0) this.#verifying.set(k, n);
        else this.#verifying.delete(k);
      }
    }
  }

  #onResult(run: ProbeRun, node: string, m: CommandResult): void {
    if (run.endedAt !== null || m.type === "probe-many-result") return;
    if (m.type === "probe-result") run.rounds.add(node, m);
    else {
      run.pending.delete(node);
      if (!m.ok) run.failed.add(node);
      run.messages.push(`${node}: ${m.message}`);
      if (run.pending.size === 0) return this.#finish(run);
    }
    run.version++;
    this.#events.emit("change", run.id);
  }

  #finish(run: ProbeRun): void {
    if (run.endedAt !== null) return;
    run.endedAt = this.o.hub.clock();
    if (run.timer !== null) clearTimeout(run.timer);
    run.version++;
    const s = run.rounds.summary();
    const outcome = run.failed.size === run.probers.length ? "failed" : "ok";
    // An agent's report or the timer ends the run: nobody waits for the entry, so a failure to write it is logged.
    void this.#audit(
      run.by,
      "ip.probe.result",
      { ip: run.ip, id: run.id },
      outcome,
      `${s.requests} requests, ${s.multiAnswered} answered by several MACs, ${s.unanswered} unanswered; ${run.messages.join("; ")}`,
    ).catch((e: unknown) => this.o.logger.error("action.audit_failed", { action: "ip.probe.result", message: (e as Error).message }));
    this.#events.emit("change", run.id);
  }

  #prune(): void {
    const now = this.o.hub.clock();
    for (const [id, r] of this.#runs) if (r.endedAt !== null && now - r.endedAt > KEEP_FINISHED_MS) this.#runs.delete(id);
  }

  /** view returns a probe run as the dashboard shows it, null when unknown (or long finished). */
  view(id: string): ProbeRunView | null {
    const r = this.#runs.get(id);
    if (r === undefined) return null;
    const node = (mac: string) => this.o.hub.nodeOfMac(mac);
    const ended = r.endedAt !== null;
    const summary = r.rounds.summary();
    return {
      id: r.id,
      ip: r.ip,
      by: r.by,
      probers: r.probers,
      startedAt: r.startedAt,
      durationMs: r.durationMs,
      state: !ended ? "running" : r.failed.size === r.probers.length ? "failed" : "done",
      rounds: r.rounds.rounds().map((x) => ({ ...x, replies: x.replies.map((y) => ({ ...y, node: node(y.mac) })) })),
      summary: ended ? { ...summary, macs: summary.macs.map((m) => ({ ...m, node: node(m.mac) })) } : null,
      messages: [...r.messages],
      failedProbers: [...r.failed],
      version: r.version,
    };
  }

  /** durations: how long a probe and a re-announce run here (actions.probeDuration / announceDuration). */
  get durations(): { readonly probeMs: number; readonly announceMs: number } {
    return { probeMs: this.o.probeMs, announceMs: this.o.announceMs };
  }

  /** latestProbe returns the newest probe of an IP (running or finished), so a reloaded page finds it again. */
  latestProbe(ip: string): string | null {
    let best: ProbeRun | null = null;
    for (const r of this.#runs.values()) if (r.ip === ip && (best === null || r.startedAt > best.startedAt)) best = r;
    return best?.id ?? null;
  }

  /** changes resolves when probe `id` changes, or when `signal` aborts. */
  changed(id: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const on = (changed: string) => {
        if (changed !== id) return;
        done();
      };
      const done = () => {
        this.#events.off("change", on);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#events.on("change", on);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { AppsV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import {
  KUBE_PROXY_CONFIG_KEY as CONFIG_KEY,
  KUBE_PROXY_NAME as KUBE_PROXY,
  KUBE_PROXY_NAMESPACE as KUBE_PROXY_NS,
  patchStrictArp,
  strictArpFix,
  type FixPlan,
  type Logger,
} from "@whohas/core";
import type { Actions } from "../actions/actions.js";
import { announceAll, announcerOf, type Announced } from "../actions/announce-batch.js";
import type { Hub } from "../hub/hub.js";
import { KubeProxyConfig } from "./kube-proxy-config.js";
import { restartKubeProxy } from "./kube-proxy-restart.js";
import { RemediationRefused } from "./refusals.js";
import { verifyNodes, verifyProbes } from "./verify.js";

const WHERE = `${KUBE_PROXY_NS}/${KUBE_PROXY}`;

/** A Preview is core's plan of the fix with what Apply needs: the ConfigMap's text and version, and the backups. */
export type Preview = Omit<Extract<FixPlan, { ok: true }>, "ok"> & {
  readonly resourceVersion: string;
  readonly current: string;
  readonly backups: readonly { readonly name: string; readonly createdAt: number }[];
};

export type StepState = "pending" | "running" | "ok" | "failed" | "skipped";
export interface Step {
  readonly name: string;
  state: StepState;
  detail: string;
  /** When it started and ended, on the hub's clock (null: not yet). */
  startedAt: number | null;
  endedAt: number | null;
}

/** A Run is one apply or rollback as the dashboard follows it. */
export interface Run {
  readonly id: string;
  readonly kind: "apply" | "rollback";
  readonly by: string;
  readonly startedAt: number;
  readonly dryRun: boolean;
  endedAt: number | null;
  result: "running" | "verified" | "done" | "failed";
  message: string;
  readonly steps: Step[];
  backup: string | null;
  /** What verification probed: each LoadBalancer IP, its expected owner, the requests sent, and what was wrong. */
  readonly checked: { readonly ip: string; readonly owner: string | null; readonly requests: number; readonly problem: string | null }[];
  /**
   * The IPs whose expected owners announced them once the run was through: clients and routers that cached another
   * node's MAC (a router for hours) learn the owner's now, not when they next ask.
   */
  readonly announced: Announced[];
  version: number;
}

export interface RemediationOptions {
  readonly kc: KubeConfig;
  readonly hub: Hub;
  readonly actions: () => Actions | undefined;
  readonly logger: Logger;
  /** How long to wait for the rollout, and for every node's sysctls (defaults 5 min and 2 min). */
  readonly rolloutTimeoutMs?: number;
  readonly sysctlTimeoutMs?: number;
}

/**
 * Remediation is the one-click strictARP fix: preview, then apply (backup, patch with the previewed
 * resourceVersion, optional server-side dry run, rollout restart, follow the rollout, verify sysctls and probe),
 * and rollback. One run at a time; every step audited; each failure stops the flow with what to do.
 */
export class Remediation {
  readonly #core: CoreV1Api;
  readonly #config: KubeProxyConfig;
  readonly #apps: AppsV1Api;
  #run: Run | null = null;
  readonly #events = new EventEmitter<{ change: [] }>();

  constructor(readonly o: RemediationOptions) {
    this.#core = o.kc.makeApiClient(CoreV1Api);
    this.#apps = o.kc.makeApiClient(AppsV1Api);
    this.#config = new KubeProxyConfig(this.#core, o.hub);
    this.#events.setMaxListeners(0);
  }

  /** preview reads kube-proxy's ConfigMap and shows the patched text, who changes, and what to know first. */
  async preview(): Promise<Preview> {
    const { text, resourceVersion } = await this.#config.read();
    if (text === undefined)
      throw new RemediationRefused(
        `ConfigMap ${WHERE} has no ${CONFIG_KEY}: this cluster's kube-proxy is not configured the kubeadm way; set strictARP where your installer keeps it`,
        "PRECONDITION_FAILED",
      );
    const exists = (read: Promise<unknown>) =>
      read.then(
        () => true,
        () => false,
      );
    const [kubeadm, antrea] = await Promise.all([
      exists(this.#core.readNamespacedConfigMap({ name: "kubeadm-config", namespace: KUBE_PROXY_NS })),
      exists(this.#apps.readNamespacedDaemonSet({ name: "antrea-agent", namespace: KUBE_PROXY_NS })),
    ]);
    const plan = strictArpFix({ config: text, kubeadm, antrea, nodes: this.o.hub.nodes() });
    if (!plan.ok) throw new RemediationRefused(`${CONFIG_KEY}: ${plan.message}`, "PRECONDITION_FAILED");
    const { ok: _, ...fix } = plan;
    return {
      ...fix,
      resourceVersion: resourceVersion ?? "",
      current: text,
      backups: (await this.#config.backups()).map((b) => ({ name: b.name, createdAt: b.createdAt })),
    };
  }

  /** current is the running or last run, null before the first. */
  current(): Run | null {
    return this.#run;
  }

  /** changed resolves at the next change of the run, or when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#events.off("change", done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#events.on("change", done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  #start(kind: Run["kind"], by: string, dryRun: boolean, steps: string[]): Run {
    const busy = this.#run;
    if (busy !== null && busy.result === "running")
      throw new RemediationRefused(
        `${busy.by} is already running ${busy.kind === "apply" ? "the fix" : "a rollback"} (since ${new Date(busy.startedAt).toISOString()}): wait for it to finish`,
        "CONFLICT",
      );
    const run: Run = {
      id: randomUUID(),
      kind,
      by,
      startedAt: this.o.hub.clock(),
      dryRun,
      endedAt: null,
      result: "running",
      message: "",
      steps: steps.map((name) => ({ name, state: "pending", detail: "", startedAt: null, endedAt: null })),
      backup: null,
      checked: [],
      announced: [],
      version: 1,
    };
    this.#run = run;
    this.#emit();
    return run;
  }

  #emit(): void {
    if (this.#run !== null) this.#run.version++;
    this.#events.emit("change");
  }

  async #step<T>(run: Run, name: string, fn: (say: (detail: string) => void) => Promise<T>): Promise<T> {
    const s = run.steps.find((x) => x.name === name);
    if (s === undefined) throw new Error(`no step ${name}`);
    s.state = "running";
    s.startedAt = this.o.hub.clock();
    this.#emit();
    try {
      const out = await fn((detail) => {
        s.detail = detail;
        this.#emit();
      });
      s.state = "ok";
      s.endedAt = this.o.hub.clock();
      this.#emit();
      return out;
    } catch (e) {
      s.state = "failed";
      s.detail = (e as Error).message;
      s.endedAt = this.o.hub.clock();
      this.#emit();
      throw e;
    }
  }

  async #finish(run: Run, result: Run["result"], message: string, input: unknown): Promise<void> {
    run.result = result;
    run.message = message;
    run.endedAt = this.o.hub.clock();
    for (const s of run.steps) if (s.state === "pending") s.state = "skipped";
    try {
      await this.o.hub.store.audit.append({
        t: run.endedAt,
        actor: run.by,
        action: `remediation.${run.kind}`,
        input,
        outcome: result === "failed" ? "failed" : "ok",
        detail: message,
      });
      this.o.logger.info(`remediation.${run.kind}`, { by: run.by, result, message });
    } finally {
      // The dashboard learns that the run ended even when its audit entry could not be written (thrown on).
      this.#emit();
    }
  }

  /**
   * apply runs the fix with the resourceVersion read at preview. It returns when the run has started; the run goes on
   * and is followed with `current` / `changed`. Refused at once (nothing written) when another run is going.
   */
  apply(resourceVersion: string, by: string, dryRun: boolean): Run {
    const steps = dryRun ? ["backup", "patch"] : ["backup", "patch", "restart", "rollout", "sysctls", "probe", "announce"];
    const run = this.#start("apply", by, dryRun, steps);
    void this.#apply(run, resourceVersion).catch((e: unknown) =>
      this.o.logger.error("remediation.audit_failed", { by: run.by, message: (e as Error).message }),
    );
    return run;
  }

  async #apply(run: Run, resourceVersion: string): Promise<void> {
    const input = { resourceVersion, dryRun: run.dryRun };
    try {
      const cm = await this.#config.read();
      const original = cm.text ?? "";
      const p = patchStrictArp(original);
      if (!p.ok) throw new RemediationRefused(p.message, "PRECONDITION_FAILED");
      if (cm.resourceVersion !== resourceVersion)
        throw new RemediationRefused(
          `kube-proxy's ConfigMap changed since the preview (resourceVersion ${resourceVersion} -> ${cm.resourceVersion ?? "?"}). Nothing was written: preview again.`,
          "CONFLICT",
        );
      const backup = await this.#step(run, "backup", async (say) => {
        const name = await this.#config.backUp(original, resourceVersion, run.by, run.dryRun);
        say(`${run.dryRun ? "would create" : "created"} ${KUBE_PROXY_NS}/${name}`);
        return name;
      });
      run.backup = run.dryRun ? null : backup;
      await this.#step(run, "patch", async (say) => {
        await this.#config.write(p.text, resourceVersion, run.dryRun, "patching");
        say(`${run.dryRun ? "the API server accepts" : "set"} ipvs.strictARP: true (only that line changes)`);
      });
      if (run.dryRun)
        return await this.#finish(run, "done", "dry run: the API server accepted the backup and the patch; nothing was changed", input);
      await this.#restartAndWait(run);
      await this.#verify(run);
      const told = await this.#announce(run);
      await this.#finish(
        run,
        "verified",
        `strictARP is on, every node applies it, and each probed IP has exactly one responder: its expected owner${told}`,
        input,
      );
    } catch (e) {
      await this.#finish(run, "failed", (e as Error).message, input);
      if (!(e instanceof RemediationRefused)) this.o.logger.error("remediation.failed", { message: (e as Error).message });
    }
  }

  #restartAndWait(run: Run): Promise<void> {
    return restartKubeProxy(
      this.#apps,
      (name, fn) => this.#step(run, name, fn),
      () => this.o.hub.clock(),
      this.o.rolloutTimeoutMs,
    );
  }

  async #verify(run: Run): Promise<void> {
    await this.#step(run, "sysctls", (say) =>
      verifyNodes({
        clusterNodes: () => this.o.hub.clusterNodes(),
        agents: () => this.o.hub.nodes(),
        clock: () => this.o.hub.clock(),
        timeoutMs: this.o.sysctlTimeoutMs ?? 120_000,
        say,
      }),
    );
    await this.#step(run, "probe", async (say) => {
      const actions = this.o.actions();
      if (actions === undefined) throw new Error("probes are not available in this process");
      // Every LoadBalancer IP announced over ARP: its expected owner must answer alone (any one node, owner unknown).
      const ips = this.o.hub.ips().filter((v) => v.services.length > 0 && v.announcer !== "metallb-bgp");
      if (ips.length === 0) {
        say("no LoadBalancer IP to probe");
        return;
      }
      await verifyProbes({
        ips: ips.map((v) => ({ ip: v.ip, owner: v.expectedOwner?.node ?? null })),
        actions,
        nodesUp: () => this.o.hub.nodes().filter((n) => n.up).length,
        by: run.by,
        say,
        checked: (c) => {
          run.checked.push(c);
          run.version++;
        },
      });
      const bad = run.checked.filter((c) => c.problem !== null);
      if (bad.length > 0) throw new Error(`not verified: ${bad.map((c) => c.problem).join("; ")}`);
      say(`${ips.length} IPs: every request answered once, by the expected owner`);
    });
  }

  /**
   * #announce makes every LoadBalancer IP announced over ARP/NDP announced again by its expected owner (a router keeps
   * a MAC for hours otherwise). The fix stands whatever happens here: what could not be announced is said in the
   * step and in the run's message (returned, to append), and the run goes on.
   */
  async #announce(run: Run): Promise<string> {
    const actions = this.o.actions();
    const ips = this.o.hub
      .ips()
      .filter((v) => v.services.length > 0 && v.announcer !== "metallb-bgp")
      .map((v) => v.ip);
    try {
      await this.#step(run, "announce", async (say) => {
        if (actions === undefined) throw new Error("announcements are not available in this process");
        if (ips.length === 0) return say("no LoadBalancer IP to announce");
        const list = await announceAll(announcerOf(actions), ips, run.by, (l) => {
          run.announced.splice(0, run.announced.length, ...l);
          const done = l.filter((a) => a.state !== "waiting" && a.state !== "announcing").length;
          say(`${done} of ${l.length} IPs announced by their owners`);
        });
        const bad = list.filter((a) => a.state !== "ok");
        // The run's message and the audit name a few; the run's list has every one.
        const named = bad.slice(0, 5).map((a) => `${a.ip}: ${a.message}`);
        if (bad.length > 5) named.push(`${bad.length - 5} more (see the list)`);
        if (bad.length > 0) throw new Error(`${bad.length} of ${list.length} not announced: ${named.join("; ")}`);
        say(`${list.length} IPs announced by their owners: clients and routers that cached another node's MAC have the owner's`);
      });
      return "";
    } catch (e) {
      return `; but ${(e as Error).message} (their clients keep another node's MAC until they ask again: Force re-announce on each IP's page)`;
    }
  }

  /**
   * rollback puts back the text of a backup, byte for byte, and restarts kube-proxy. kube-proxy never resets the
   * sysctls, so the nodes keep answering strictly until they reboot.
   */
  async rollback(name: string, by: string): Promise<Run> {
    const b = (await this.#config.backups()).find((x) => x.name === name);
    if (b === undefined) throw new RemediationRefused(`no backup ${name} known to this hub`, "PRECONDITION_FAILED");
    const run = this.#start("rollback", by, false, ["restore", "restart", "rollout", "announce"]);
    run.backup = name;
    void (async () => {
      try {
        await this.#step(run, "restore", async (say) => {
          const { resourceVersion } = await this.#config.read();
          await this.#config.write(b.text, resourceVersion, false, "restoring");
          say(`${CONFIG_KEY} is the text of ${name} again (${b.text.length} bytes)`);
        });
        await this.#restartAndWait(run);
        const told = await this.#announce(run);
        await this.#finish(
          run,
          "done",
          `restored ${name} and restarted kube-proxy. kube-proxy never resets arp_ignore/arp_announce: the nodes keep the strict behaviour until they reboot${told}`,
          { backup: name },
        );
      } catch (e) {
        await this.#finish(run, "failed", (e as Error).message, { backup: name });
      }
    })().catch((e: unknown) => this.o.logger.error("remediation.failed", { message: (e as Error).message }));
    return run;
  }
}

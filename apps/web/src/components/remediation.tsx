"use client";

import Link from "next/link";
import { useEffect, useRef, useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import type { RouterOutputs } from "~/server/api";
import { useTRPC } from "~/trpc/react";
import { useCan } from "./ui/session";
import { Empty, Failure, Skeleton } from "./ui/states";
import { ConfirmDialog } from "./ui/confirm-dialog";
import { Head } from "./ui/table";
import { Ago } from "./ui/time";
import { openConfirm } from "./ui/confirm";
import { AnnouncedTable } from "./announced";

type Preview = RouterOutputs["remediation"]["preview"];

const STEP_TEXT: Record<string, string> = {
  backup: "Back up ConfigMap kube-system/kube-proxy",
  patch: "Set ipvs.strictARP: true (with the previewed resourceVersion)",
  restart: "Restart the kube-proxy DaemonSet (rollout restart)",
  rollout: "Wait for the rollout (kubectl rollout status)",
  sysctls: "Every node's agent reports arp_ignore=1, arp_announce=2",
  probe: "Probe each LoadBalancer IP from two nodes: one responder, the owner",
  restore: "Put back the backed-up config.conf, byte for byte",
  announce: "Each LoadBalancer IP's owner announces it (clients and routers forget the other nodes' MACs)",
};

/** Lines shows a config with the lines that differ from `other` marked. */
function Lines({ text, other, label }: { text: string; other: string; label: string }) {
  const theirs = new Set(other.split("\n"));
  return (
    <div>
      <strong>{label}</strong>
      {/* Focusable: a config taller than the box scrolls, and a keyboard user must be able to scroll it too. */}
      <pre data-testid={`config-${label === "Now" ? "current" : "patched"}`} tabIndex={0} aria-label={`config.conf: ${label}`}>
        {text.split("\n").map((l, i) => (
          <span key={i}>
            {theirs.has(l) ? l : <mark>{l}</mark>}
            {"\n"}
          </span>
        ))}
      </pre>
    </div>
  );
}

/**
 * Reverted warns, while a "strictARP reverted" incident is open, that an installer undid the fix and will undo it
 * again on its next run unless its own configuration says true; it links to the incident's persistence step.
 */
function Reverted() {
  const trpc = useTRPC();
  const open = useQuery({ ...trpc.incidents.list.queryOptions({ state: "open", limit: 500 }), refetchInterval: 5000 });
  const i = open.data?.find(
    (x) => x.ip === "cluster/kube-proxy" && x.facets.some((f) => f.type === "strictarp-reverted" && f.resolvedAt === null),
  );
  if (i === undefined) return null;
  return (
    <p className="banner bad" role="status" data-testid="fix-reverted">
      {i.detail}. Installers regenerate kube-proxy&apos;s ConfigMap: applying the fix here again is undone on their next run.{" "}
      <Link href={`/incidents/${i.id}`} data-testid="fix-reverted-link">
        Persist strictARP where the installer keeps it
      </Link>
      , then apply the fix.
    </p>
  );
}

/**
 * RemediationPage is the guided strictARP fix: the preview, Apply (after a confirmation, optionally as a server-side
 * dry run) with each step's progress live, the verification, and Rollback to a backup.
 */
export function RemediationPage() {
  const trpc = useTRPC();
  const can = useCan("operator");
  const preview = useQuery({ ...trpc.remediation.preview.queryOptions(), enabled: can, retry: false });
  const live = useSubscription(trpc.remediation.live.subscriptionOptions(undefined));
  const apply = useMutation(trpc.remediation.apply.mutationOptions());
  const rollback = useMutation(trpc.remediation.rollback.mutationOptions());
  const [dryRun, setDryRun] = useState(false);
  const [rollbackTo, setRollbackTo] = useState<string | null>(null);
  const confirmApply = useRef<HTMLDialogElement>(null);
  const confirmRollback = useRef<HTMLDialogElement>(null);
  const run = live.data?.data ?? null;
  const running = run?.result === "running";
  // When a run ends, the ConfigMap (and the backups) changed: read them again.
  const refetch = preview.refetch;
  const ended = run !== null && run.result !== "running" ? `${run.id}:${run.result}` : null;
  useEffect(() => {
    if (ended !== null) void refetch();
  }, [ended, refetch]);

  if (!can) return <Empty>The fix changes the cluster: it needs the operator role.</Empty>;
  if (preview.error !== null) return <Failure message={preview.error.message} />;
  if (preview.data === undefined) return <Skeleton rows={10} />;
  const p: Preview = preview.data;
  return (
    <>
      <Reverted />
      <p>
        kube-proxy in <strong>{p.mode === "" ? "iptables" : p.mode}</strong> mode, strictARP{" "}
        <strong data-testid="configured-strictarp">{String(p.strictARP)}</strong> in ConfigMap kube-system/kube-proxy (resourceVersion{" "}
        {p.resourceVersion}).{" "}
        {p.affected.length > 0 ? (
          <>
            Nodes that answer ARP for any local address now: <strong data-testid="affected">{p.affected.join(", ")}</strong>.
          </>
        ) : (
          "Every node with an agent answers only for its own addresses."
        )}
      </p>
      <div className="sidebyside">
        <Lines text={p.current} other={p.patched} label="Now" />
        <Lines text={p.patched} other={p.current} label="After" />
      </div>
      {p.warnings.length > 0 && (
        <ul data-testid="warnings">
          {p.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}
      <div className="actions">
        <label>
          <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.target.checked)} /> server-side dry run only
        </label>
        <button
          type="button"
          disabled={p.disabledReason !== null || running || apply.isPending}
          title={p.disabledReason ?? undefined}
          onClick={() => openConfirm(confirmApply.current)}
          data-testid="apply"
        >
          {dryRun ? "Dry run" : "Apply the fix"}
        </button>
        <button type="button" onClick={() => void preview.refetch()} data-testid="refresh-preview">
          Preview again
        </button>
        {p.disabledReason !== null && <span className="muted">{p.disabledReason}</span>}
      </div>
      {apply.error !== null && (
        <p className="banner bad" role="alert" data-testid="apply-error">
          {apply.error.message}
        </p>
      )}
      <ConfirmDialog
        dialogRef={confirmApply}
        title={dryRun ? "Dry-run the fix?" : "Change the cluster?"}
        action={dryRun ? "Dry run" : "Apply"}
        testId="confirm-apply"
        onConfirm={() => apply.mutate({ resourceVersion: p.resourceVersion, dryRun })}
      >
        {dryRun
          ? "The API server checks the backup and the patch without storing anything."
          : `whohas backs up kube-proxy's ConfigMap, sets strictARP: true, restarts kube-proxy on every node (${p.affected.length} answer for any local address now), waits for the rollout and verifies.`}
      </ConfirmDialog>

      {run !== null && (
        <section aria-labelledby="run-h" data-testid="run" data-result={run.result} data-kind={run.kind}>
          <h2 id="run-h">
            {run.kind === "apply" ? (run.dryRun ? "Dry run" : "Fix") : "Rollback"} by {run.by}, <Ago t={run.startedAt} />
          </h2>
          <ol className="steps">
            {run.steps.map((s) => (
              <li key={s.name} data-step={s.name} data-state={s.state}>
                {STEP_TEXT[s.name] ?? s.name}
                {s.startedAt === null || s.endedAt === null ? null : (
                  <span className="muted"> ({Math.max(1, Math.round((s.endedAt - s.startedAt) / 1000))} s)</span>
                )}
                {s.detail === "" ? null : <span className="muted"> : {s.detail}</span>}
              </li>
            ))}
          </ol>
          {run.checked.length === 0 ? null : (
            <table className="checked" data-testid="checked">
              <caption>What verification probed</caption>
              <Head cols={["IP", "Expected owner", "Requests", "Result"]} />
              <tbody>
                {run.checked.map((c) => (
                  <tr key={c.ip} data-ip={c.ip} data-ok={c.problem === null}>
                    <td className="mono">{c.ip}</td>
                    <td>{c.owner ?? <span className="muted">unknown (one answer is enough)</span>}</td>
                    <td>{c.requests}</td>
                    <td>{c.problem ?? "answered once, by the owner"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {run.announced.length === 0 ? null : <AnnouncedTable rows={run.announced} caption="Who announced each IP afterwards" />}
          {run.result === "running" ? (
            <p className="progress" role="status">
              Working…
            </p>
          ) : (
            <p className={run.result === "failed" ? "banner bad" : "banner ok"} role="status" data-testid="run-result">
              {run.result === "verified" ? "Verified: " : run.result === "failed" ? "Stopped: " : "Done: "}
              {run.message}
            </p>
          )}
        </section>
      )}

      <h2>Rollback</h2>
      {p.backups.length === 0 ? (
        <Empty testId="no-backups">
          No backup yet: Apply makes one (kube-proxy-whohas-backup-TIME in kube-system, and a copy in whohas).
        </Empty>
      ) : (
        <ul data-testid="backups">
          {p.backups.map((b) => (
            <li key={b.name}>
              <code>{b.name}</code> (<Ago t={b.createdAt} />){" "}
              <button
                type="button"
                disabled={running || rollback.isPending}
                onClick={() => {
                  setRollbackTo(b.name);
                  openConfirm(confirmRollback.current);
                }}
                data-testid="rollback"
              >
                Roll back to this
              </button>
            </li>
          ))}
        </ul>
      )}
      {rollback.error !== null && (
        <p className="banner bad" role="alert">
          {rollback.error.message}
        </p>
      )}
      <ConfirmDialog
        dialogRef={confirmRollback}
        title={`Roll back to ${rollbackTo ?? ""}?`}
        action="Roll back"
        testId="confirm-rollback"
        onConfirm={() => rollbackTo !== null && rollback.mutate({ backup: rollbackTo })}
      >
        whohas puts back the backed-up config.conf byte for byte and restarts kube-proxy. kube-proxy never resets arp_ignore / arp_announce:
        the nodes keep answering strictly until they reboot.
      </ConfirmDialog>
    </>
  );
}

"use client";

import { useEffect, useRef, useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { RouterOutputs } from "~/server/api";
import { useTRPC } from "~/trpc/react";
import { useCan } from "./ui/session";
import { Head } from "./ui/table";
import { IpCapture } from "./capture-link";
import { openConfirm } from "./ui/confirm";
import { ConfirmDialog } from "./ui/confirm-dialog";

type Probe = NonNullable<RouterOutputs["actions"]["latestProbe"]>;

const fmtMs = (ms: number) => (ms < 1 ? `${Math.round(ms * 1000)} µs` : `${ms.toFixed(1)} ms`);

/**
 * IpActions are what an operator can do about one IP from its page: make the expected owner announce it again, and
 * probe it for a minute from two nodes, watching responders per request live. Viewers see why the buttons are off.
 */
export function IpActions({ ip, owner, ownerUnknown }: { ip: string; owner: string | null; ownerUnknown?: string | null }) {
  const trpc = useTRPC();
  const can = useCan("operator");
  const confirmRef = useRef<HTMLDialogElement>(null);
  const announce = useMutation(trpc.actions.reannounce.mutationOptions());
  // The probe shown: the newest of this IP's (started here or by someone else), kept as its updates stream in.
  const [probe, setProbe] = useState<Probe | null>(null);
  const take = (p: Probe | null | undefined) => {
    if (p === null || p === undefined) return;
    setProbe((cur) => (cur === null || (p.id === cur.id ? p.version > cur.version : p.startedAt > cur.startedAt) ? p : cur));
  };
  const durations = useQuery({ ...trpc.actions.durations.queryOptions(), staleTime: Infinity });
  const probeSeconds = Math.round((durations.data?.probeMs ?? 60_000) / 1000);
  const latest = useQuery({ ...trpc.actions.latestProbe.queryOptions({ ip }), refetchInterval: 5000 });
  const start = useMutation(trpc.actions.probe.mutationOptions({ onSuccess: () => void latest.refetch() }));
  useEffect(() => take(latest.data), [latest.data]);
  useSubscription(
    trpc.actions.probeLive.subscriptionOptions(
      { id: probe?.id ?? "00000000-0000-4000-8000-000000000000" },
      { enabled: probe?.state === "running", onData: (d) => take(d.data) },
    ),
  );
  const running = probe?.state === "running";
  // Announcing from a guessed node would pull traffic to the wrong place: the button says why whohas cannot.
  const why = !can
    ? "needs the operator role"
    : owner === null
      ? `the expected owner is unknown: ${ownerUnknown ?? "no announcer recognised"}`
      : null;

  return (
    <section aria-labelledby="actions-h">
      <h2 id="actions-h">Actions</h2>
      <div className="actions">
        <button
          type="button"
          disabled={why !== null || announce.isPending}
          title={why ?? `gratuitous announcements from ${owner ?? ""}`}
          onClick={() => openConfirm(confirmRef.current)}
          data-testid="reannounce"
        >
          {announce.isPending ? `Announcing from ${owner ?? ""}…` : "Force re-announce"}
        </button>
        <button
          type="button"
          disabled={!can || running || start.isPending}
          title={can ? "ask who has this IP once a second from two nodes" : "needs the operator role"}
          onClick={() => start.mutate({ ip })}
          data-testid="probe"
        >
          {running ? "Probing…" : `Probe ${probeSeconds} s`}
        </button>
        <IpCapture ip={ip} />
        {why !== null && <span className="muted">Force re-announce: {why}.</span>}
        {announce.isPending && (
          <span className="progress" role="status">
            {owner} is announcing {ip} (MetalLB&apos;s frames, every 1.1 s)…
          </span>
        )}
        {announce.data !== undefined && (
          <span className="ok-text" role="status" data-testid="reannounce-result">
            {announce.data.node} announced {ip}: {announce.data.message}
          </span>
        )}
        {announce.error !== null && (
          <span className="bad-text" role="alert">
            Re-announce failed: {announce.error.message}
          </span>
        )}
        {start.error !== null && (
          <span className="bad-text" role="alert">
            Probe refused: {start.error.message}
          </span>
        )}
      </div>
      <ConfirmDialog
        dialogRef={confirmRef}
        title={`Announce ${ip} from ${owner}?`}
        action="Announce"
        testId="confirm-reannounce"
        onConfirm={() => announce.mutate({ ip })}
      >
        {owner} sends MetalLB&apos;s gratuitous ARP/NA for {ip} for a few seconds. Switches and clients that cached another node&apos;s MAC
        switch to {owner}&apos;s. Only the expected owner announces: whohas never announces from another node.
      </ConfirmDialog>
      {probe !== null && <ProbePanel probe={probe} />}
    </section>
  );
}

function ProbePanel({ probe }: { probe: Probe }) {
  const data = probe.rounds.map((r) => ({ seq: r.seq, responders: r.replies.length }));
  const last = probe.rounds.at(-1);
  const elapsed = last === undefined ? 0 : Math.round((last.at - probe.startedAt) / 1000) + 1;
  const worst = Math.max(0, ...data.map((d) => d.responders));
  return (
    <div className="chart" data-testid="probe-panel" data-state={probe.state} data-max-responders={worst} data-rounds={probe.rounds.length}>
      <p>
        {probe.state === "running" ? (
          <span className="progress" role="status">
            Probing {probe.ip} from {probe.probers.join(" and ")}: {elapsed} of {Math.round(probe.durationMs / 1000)} s
          </span>
        ) : (
          <strong>
            Probe by {probe.by} from {probe.probers.join(" and ")}: {probe.state}
          </strong>
        )}
      </p>
      <ResponsiveContainer width="100%" height={180}>
        <BarChart data={data} margin={{ top: 8, right: 16, bottom: 8, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" stroke="var(--line)" />
          <XAxis
            dataKey="seq"
            stroke="var(--muted)"
            label={{ value: "request (one a second)", position: "insideBottom", offset: -4, fill: "var(--muted)", fontSize: 11 }}
          />
          <YAxis stroke="var(--muted)" allowDecimals={false} domain={[0, Math.max(2, worst)]} />
          <Tooltip />
          <Bar dataKey="responders" fill={worst > 1 ? "var(--bad)" : "var(--ok)"} isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
      {last !== undefined && (
        <p data-testid="probe-last">
          Request #{last.seq}:{" "}
          {last.replies.length === 0 ? "no answer" : last.replies.map((r) => `${r.node ?? r.mac} ${fmtMs(r.latencyMs)}`).join(", ")}
          {last.replies.length > 1 ? (
            <strong className="bad-text"> (several answer: {last.replies[0]?.node ?? last.replies[0]?.mac} was first)</strong>
          ) : null}
        </p>
      )}
      {probe.summary !== null && (
        <div data-testid="probe-summary">
          <p className={probe.summary.multiAnswered > 0 ? "bad-text" : "ok-text"}>
            {probe.summary.requests} requests: {probe.summary.multiAnswered} answered by more than one MAC, {probe.summary.unanswered}{" "}
            unanswered.
          </p>
          <table>
            <Head cols={["Node", "MAC", "Replies", "First"]} />
            <tbody>
              {probe.summary.macs.map((m) => (
                <tr key={m.mac}>
                  <td>{m.node ?? <span className="muted">unknown</span>}</td>
                  <td className="mono">{m.mac}</td>
                  <td>{m.replies}</td>
                  <td>{m.first}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {probe.messages.length > 0 && <p className="muted">{probe.messages.join(" · ")}</p>}
        </div>
      )}
    </div>
  );
}

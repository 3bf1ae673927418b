"use client";

import Link from "next/link";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import type { RouterOutputs } from "~/server/api";
import { useTRPC } from "~/trpc/react";
import { useLive } from "./ui/live";
import { useCan } from "./ui/session";
import { Empty, Failure, Skeleton } from "./ui/states";
import { Head } from "./ui/table";
import { Ago } from "./ui/time";
import { IpLink } from "./ui/ip-name";
import { IncidentCapture } from "./capture-link";
import { macText } from "./ui/stranger";
import { WhatHappened, WhatToDo } from "./incident-story";

type Incident = RouterOutputs["incidents"]["list"][number];

/**
 * Subject links an incident's subject: its IP's page, the Nodes page for a node's (node/NAME), the Fix page for
 * kube-proxy's ConfigMap (cluster/kube-proxy).
 */
function Subject({ s }: { s: string }) {
  if (s.startsWith("node/")) return <Link href="/nodes">node {s.slice(5)}</Link>;
  if (s.startsWith("cluster/")) return <Link href="/fix">ConfigMap kube-system/{s.slice(8)}</Link>;
  return <IpLink ipKey={s} className="mono" />;
}

type Facet = Incident["facets"][number];

/**
 * Findings names an incident's worst finding, then its other findings as tags (one per type; a tag is dimmed once
 * that finding cleared and holds no more).
 */
function Findings({ incident }: { incident: Incident }) {
  const others = new Map<string, Facet[]>();
  for (const f of incident.facets) if (f.type !== incident.type) others.set(f.type, [...(others.get(f.type) ?? []), f]);
  return (
    <>
      <strong>{incident.type}</strong>{" "}
      {[...others].map(([type, lives]) => {
        const holding = lives.some((f) => f.resolvedAt === null);
        return (
          <span
            key={type}
            className={holding ? "chip" : "chip muted"}
            data-finding={type}
            title={holding ? lives.at(-1)?.detail : "cleared"}
          >
            {type}
          </span>
        );
      })}
    </>
  );
}

function IncidentRows({ list, testId }: { list: Incident[]; testId: string }) {
  return (
    <table data-testid={testId}>
      <Head cols={["#", "Subject", "Findings", "Detail", "Opened", "Last evidence", "Resolved", "Acknowledged"]} />
      <tbody>
        {list.map((i) => (
          <tr key={i.id} data-incident={i.id} data-type={i.type} data-findings={[...new Set(i.facets.map((f) => f.type))].join(" ")}>
            <td>
              <Link href={`/incidents/${i.id}`}>#{i.id}</Link>
            </td>
            <td>
              <Subject s={i.ip} />
            </td>
            <td>
              <Findings incident={i} />
            </td>
            <td>{i.detail}</td>
            <td>
              <Ago t={i.firstSeen} />
            </td>
            <td>
              <Ago t={i.lastSeen} />
            </td>
            <td>{i.resolvedAt === null ? <strong className="state-multi-responder">open</strong> : <Ago t={i.resolvedAt} />}</td>
            <td>
              <Acknowledge incident={i} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Acknowledge shows who acknowledged an incident, or (to operators) the button that does it. */
function Acknowledge({ incident, onDone }: { incident: Incident; onDone?: () => void }) {
  const trpc = useTRPC();
  const can = useCan("operator");
  const ack = useMutation(trpc.incidents.acknowledge.mutationOptions({ onSuccess: onDone }));
  const by = incident.acknowledgedBy ?? ack.data?.acknowledgedBy ?? null;
  if (by !== null)
    return (
      <span data-testid="acknowledged">
        by {by} {incident.acknowledgedAt === null ? null : <Ago t={incident.acknowledgedAt} />}
      </span>
    );
  if (!can) return <span className="muted">no</span>;
  return (
    <>
      <button type="button" disabled={ack.isPending} onClick={() => ack.mutate({ id: incident.id })} data-testid="acknowledge">
        {ack.isPending ? "Acknowledging…" : "Acknowledge"}
      </button>
      {ack.error !== null && (
        <span className="bad-text" role="alert">
          {" "}
          {ack.error.message}
        </span>
      )}
    </>
  );
}

/** IncidentsList shows open incidents, then past ones. */
export function IncidentsList() {
  const trpc = useTRPC();
  const all = useLive(
    useQuery(trpc.incidents.list.queryOptions({ state: "all", limit: 500 })),
    useSubscription(trpc.incidents.live.subscriptionOptions({ filter: { state: "all", limit: 500 } })),
  );
  if (all.error !== null) return <Failure message={all.error} />;
  if (all.data === undefined) return <Skeleton rows={5} />;
  const open = all.data.filter((i) => i.resolvedAt === null);
  const past = all.data.filter((i) => i.resolvedAt !== null);
  return (
    <>
      <h2>Open ({open.length})</h2>
      {open.length === 0 ? <Empty testId="no-open">No open incident.</Empty> : <IncidentRows list={open} testId="incidents-open" />}
      <h2>Resolved ({past.length})</h2>
      {past.length === 0 ? (
        <Empty testId="no-past">None yet. Resolved incidents are kept for the retention period (storage.retention).</Empty>
      ) : (
        <IncidentRows list={past} testId="incidents-past" />
      )}
    </>
  );
}

type Revert = NonNullable<NonNullable<RouterOutputs["incidents"]["story"]>["revert"]>;

/** WhoReverted says who turned strictARP off, when, and which installer whohas recognised (or that it did not). */
function WhoReverted({ r }: { r: Revert }) {
  return (
    <p data-testid="revert-writer">
      strictARP was turned off by{" "}
      {r.manager === null ? (
        <strong>an unknown writer</strong>
      ) : (
        <>
          field manager <strong className="mono">{r.manager}</strong>
          {r.operation === null ? null : ` (${r.operation})`}
        </>
      )}
      {r.at === null ? null : (
        <>
          {" "}
          at <time dateTime={new Date(r.at).toISOString()}>{new Date(r.at).toLocaleString()}</time>
        </>
      )}
      .{" "}
      {r.installer === "unknown" ? (
        <span data-testid="revert-installer">whohas does not recognise the installer from the cluster.</span>
      ) : (
        <span data-testid="revert-installer">
          Installer: <strong>{r.step.name}</strong>, recognised by {r.recognisedBy}.
        </span>
      )}{" "}
      Its next run writes strictARP false again unless its own configuration says true: see What to do now.
    </p>
  );
}

/**
 * IncidentDetail shows one incident: what to do now, what happened in time order, its findings with their own times, and
 * its evidence as recorded when it opened.
 */
export function IncidentDetail({ id }: { id: number }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.incidents.byId.queryOptions({ id }), refetchInterval: 5000 });
  const story = useQuery({ ...trpc.incidents.story.queryOptions({ id }), refetchInterval: 5000 });
  if (q.error !== null) return <Failure message={q.error.message} />;
  if (q.data === undefined) return <Skeleton rows={5} />;
  const i = q.data;
  if (i === null)
    return (
      <Empty>
        No incident #{id}. <Link href="/incidents">All incidents</Link>
      </Empty>
    );
  const ev = i.evidence as {
    services?: { namespace: string; name: string }[];
    expectedOwner?: { node: string; source: string } | null;
    responders?: { mac: string; node: string | null; vendor?: string | null; answering: boolean; replies: number }[];
  };
  const named = new Map(i.named.map((n) => [n.mac, n]));
  const macList = (macs: readonly string[]) => macs.map((m) => macText(m, named.get(m))).join(", ") || "-";
  // The findings that hold, the one the incident is named after first.
  const holding = i.facets.filter((f) => f.resolvedAt === null).sort((a, b) => Number(b.type === i.type) - Number(a.type === i.type));
  return (
    <>
      <h1>
        #{i.id} {i.type} on <Subject s={i.ip} />{" "}
        <span className={i.resolvedAt === null ? "state-multi-responder" : "state-single"} data-testid="incident-state">
          {i.resolvedAt === null ? "open" : "resolved"}
        </span>
      </h1>
      <p>{i.detail}</p>
      {story.data?.revert == null ? null : <WhoReverted r={story.data.revert} />}
      <p>
        Acknowledged: <Acknowledge incident={i} onDone={() => void q.refetch()} />
      </p>
      <p className="muted">
        First seen <Ago t={i.firstSeen} />, last evidence <Ago t={i.lastSeen} />, seen {i.count} times. MACs:{" "}
        <span className="mono">{macList(i.macs)}</span>
      </p>
      <h2>What to do now</h2>
      {story.data === undefined ? <Skeleton rows={3} /> : story.data === null ? null : <WhatToDo story={story.data} findings={holding} />}
      <h2>What happened</h2>
      {story.error !== null ? (
        <Failure message={story.error.message} />
      ) : story.data === undefined ? (
        <Skeleton rows={4} />
      ) : (
        <WhatHappened entries={story.data?.entries ?? []} />
      )}
      <h2>Findings</h2>
      <table data-testid="incident-facets">
        <Head cols={["Finding", "State", "First seen", "Last evidence", "Seen", "MACs", "Detail"]} />
        <tbody>
          {i.facets.map((f) => (
            <tr key={`${f.type}@${f.firstSeen}`} data-finding={f.type} data-holding={f.resolvedAt === null}>
              <td className="nowrap">{f.type}</td>
              <td>
                {f.resolvedAt === null ? (
                  <strong className="state-multi-responder">holds</strong>
                ) : (
                  <>
                    cleared <Ago t={f.resolvedAt} />
                  </>
                )}
              </td>
              <td>
                <Ago t={f.firstSeen} />
              </td>
              <td>
                <Ago t={f.lastSeen} />
              </td>
              <td>{f.count}×</td>
              <td className="mono" data-testid="facet-macs">
                {macList(f.macs)}
              </td>
              <td>{f.detail}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Evidence when it opened</h2>
      {i.ip.startsWith("node/") || i.ip.startsWith("cluster/") ? (
        <pre data-testid="evidence" tabIndex={0} aria-label="evidence recorded when the incident opened">
          {JSON.stringify(i.evidence, null, 2)}
        </pre>
      ) : (
        <ul data-testid="evidence">
          <li>Services: {(ev.services ?? []).map((s) => `${s.namespace}/${s.name}`).join(", ") || "none known"}</li>
          <li>Expected owner: {ev.expectedOwner ? `${ev.expectedOwner.node} (${ev.expectedOwner.source})` : "unknown"}</li>
          <li>
            Responders:{" "}
            {(ev.responders ?? [])
              .map(
                (r) =>
                  `${r.node === null ? macText(r.mac, r) : `${r.node} ${r.mac}`}${r.answering ? "" : " (not answering)"}, ${r.replies} replies`,
              )
              .join("; ") || "none"}
          </li>
          <li>Sample times: {i.samples.map((t) => new Date(t).toLocaleTimeString()).join(", ")}</li>
        </ul>
      )}
      {!i.ip.startsWith("node/") && !i.ip.startsWith("cluster/") && (
        <IncidentCapture id={i.id} open={i.resolvedAt === null} summary={i.capture} />
      )}
    </>
  );
}

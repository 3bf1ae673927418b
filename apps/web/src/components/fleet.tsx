"use client";

import Link from "next/link";
import { useQueries, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "~/trpc/react";
import { ipHref, IpName } from "./ui/ip-name";
import { STATE_TEXT } from "./ui/ips-view";
import { Head } from "./ui/table";
import { Empty, Failure, Skeleton } from "./ui/states";
import { Ago } from "./ui/time";

/** How often the fleet's pages read the clusters again (each cluster's hub publishes every 5 s). */
const REFRESH_MS = 5000;

/** clusterHref is where a cluster's page of `path` is: this hub's own, or the cluster's hub when it published its address. */
function clusterHref(c: { self: boolean; url: string | null }, path: string): string | null {
  if (c.self) return path;
  return c.url === null ? null : `${c.url.replace(/\/$/, "")}${path}`;
}

/** Fleet is the all-clusters overview: each cluster at a glance, then every cluster's IPs in one table. */
export function Fleet({ initialCluster }: { initialCluster: string | null }) {
  const trpc = useTRPC();
  const clusters = useQuery({ ...trpc.fleet.clusters.queryOptions(), refetchInterval: REFRESH_MS });
  const [shown, setShown] = useState<string>(initialCluster ?? "");
  const [problems, setProblems] = useState(false);
  const names = clusters.data?.map((c) => c.name) ?? [];
  const ips = useQueries({
    queries: names.map((cluster) => ({ ...trpc.fleet.ips.queryOptions({ cluster }), refetchInterval: REFRESH_MS })),
  });
  if (clusters.error !== null) return <Failure message={clusters.error.message} />;
  if (clusters.data === undefined) return <Skeleton rows={4} />;
  const byName = new Map(clusters.data.map((c) => [c.name, c]));
  const rows = ips
    .flatMap((q) => q.data?.rows ?? [])
    .filter((r) => shown === "" || r.cluster === shown)
    .filter((r) => !problems || r.state === "multi-responder" || r.state === "no-responder" || r.findings.length > 0);
  const failed = ips.find((q) => q.error !== null)?.error;
  const unreadable = ips
    .filter((q) => (q.data?.unreadable ?? 0) > 0)
    .map((q) => `${q.data?.cluster.name ?? ""}: ${q.data?.unreadable ?? 0}`);
  return (
    <>
      <table data-testid="clusters">
        <Head cols={["Cluster", "Reporting", "IPs", "Several responders", "No responder", "Open incidents", "Agents", "strictARP", ""]} />
        <tbody>
          {clusters.data.map((c) => {
            const s = c.summary;
            const href = clusterHref(c, "/");
            return (
              <tr key={c.name} data-cluster={c.name} data-reporting={c.reporting}>
                <td className="nowrap">
                  {c.name}
                  {c.self ? (
                    <>
                      {" "}
                      <span className="chip">this hub</span>
                    </>
                  ) : null}
                </td>
                <td className={c.reporting ? "state-single" : "state-multi-responder"}>
                  {c.reporting ? "yes" : "no: "}
                  {c.reporting ? null : (
                    <span>
                      its hub last published <Ago t={c.reportedAt} />; what it shows is as of then
                    </span>
                  )}
                </td>
                {s === null ? (
                  <td colSpan={6} className="muted" data-testid="unreadable-summary">
                    what its hub published cannot be read (a hub of another version?): see its own dashboard
                  </td>
                ) : (
                  <>
                    <td>{s.ips}</td>
                    <td className={(s.states["multi-responder"] ?? 0) > 0 ? "state-multi-responder" : undefined} data-testid="multi">
                      {s.states["multi-responder"] ?? 0}
                    </td>
                    <td className={(s.states["no-responder"] ?? 0) > 0 ? "state-no-responder" : undefined}>
                      {s.states["no-responder"] ?? 0}
                    </td>
                    <td data-testid="open-incidents">{s.openIncidents}</td>
                    <td>
                      {s.agents.up} of {s.agents.total} up
                    </td>
                    <td className={s.strictArp === "exposed" ? "state-multi-responder" : s.strictArp === "ok" ? "state-single" : undefined}>
                      {s.strictArp}
                    </td>
                  </>
                )}
                <td>
                  {href === null ? (
                    <span className="muted" title="its hub has no alerting.externalUrl: set it there for links">
                      no address published
                    </span>
                  ) : c.self ? (
                    <Link href={href}>Overview</Link>
                  ) : (
                    <a href={href}>Open its dashboard</a>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {clusters.data.length === 1 ? (
        <Empty testId="single-cluster">
          This hub is the only one writing to its database. To see several clusters here, run one hub per cluster on one PostgreSQL, each
          with its own cluster.name (README, &quot;Fleets&quot;).
        </Empty>
      ) : null}
      <h2>IPs in every cluster</h2>
      <div className="filters">
        <label>
          Cluster{" "}
          <select value={shown} onChange={(e) => setShown(e.target.value)} aria-label="cluster shown">
            <option value="">all</option>
            {names.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>{" "}
        <label>
          <input type="checkbox" checked={problems} onChange={(e) => setProblems(e.target.checked)} /> only IPs with a problem
        </label>
      </div>
      {failed !== undefined ? <Failure message={failed.message} /> : null}
      {unreadable.length > 0 ? (
        <p className="muted" data-testid="unreadable-rows">
          Rows left out because what their hub published cannot be read (a hub of another version?): {unreadable.join(", ")}.
        </p>
      ) : null}
      {rows.length === 0 ? (
        <Empty testId="no-fleet-ips">No IP matches.</Empty>
      ) : (
        <table data-testid="fleet-ips">
          <Head cols={["Cluster", "IP", "Service", "Verdict", "Answering", "Expected owner"]} />
          <tbody>
            {rows.map((r) => {
              const c = byName.get(r.cluster);
              const href = c === undefined ? null : clusterHref(c, ipHref(r.ip));
              return (
                <tr key={`${r.cluster} ${r.ip}`} data-cluster={r.cluster} data-ip={r.ip} data-state={r.state}>
                  <td className="nowrap">{r.cluster}</td>
                  <td className="mono nowrap">
                    {href === null ? (
                      <IpName ipKey={r.ip} />
                    ) : c?.self === true ? (
                      <Link href={href}>
                        <IpName ipKey={r.ip} />
                      </Link>
                    ) : (
                      <a href={href}>
                        <IpName ipKey={r.ip} />
                      </a>
                    )}
                  </td>
                  <td>{r.services.map((s) => `${s.namespace}/${s.name}`).join(", ") || <span className="muted">none</span>}</td>
                  <td className={`state-${r.state}`} data-testid="verdict">
                    {c?.reporting === false ? `${STATE_TEXT[r.state]} (not reporting)` : STATE_TEXT[r.state]}
                  </td>
                  <td className="mono">
                    {r.responders
                      .filter((x) => x.answering)
                      .map((x) => x.node ?? x.mac)
                      .join(", ") || <span className="muted">nobody</span>}
                  </td>
                  <td>{r.expectedOwner?.node ?? <span className="muted">unknown</span>}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}

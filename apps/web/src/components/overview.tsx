"use client";

import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import type { RouterOutputs } from "~/server/api";
import { useTRPC } from "~/trpc/react";
import { useLive } from "./ui/live";
import { useIps } from "./ui/use-ips";
import { Empty, Failure, Skeleton } from "./ui/states";
import { Head } from "./ui/table";
import { Ago, useNow } from "./ui/time";
import { IpName, ipHref } from "./ui/ip-name";

type Ip = RouterOutputs["ips"]["list"][number];
type Summary = RouterOutputs["cluster"]["summary"];

/** seconds renders a duration for people: "45 s", "3 min 20 s", "2 h 5 min". */
function span(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** StaleInventory says, while the API server cannot be read, that Services and owners are as of an earlier time. */
function StaleInventory({ stale }: { stale: Summary["inventoryStale"] }) {
  const now = useNow();
  if (stale === null) return null;
  return (
    <div className="banner warn" role="status" data-testid="inventory-stale" data-since={stale.since}>
      <strong>Kubernetes inventory stale for {span(now - stale.since)}</strong> (as of{" "}
      <time dateTime={new Date(stale.since).toISOString()}>{new Date(stale.since).toLocaleTimeString()}</time>): the API server cannot be
      listed or watched ({stale.message}). Services, expected owners and kube-proxy settings are shown as they were; traffic is live. whohas
      retries and relists by itself.
    </div>
  );
}

/**
 * Unwatched says which nodes no live agent watches: a MAC of theirs looks like no node's, so another host answering
 * for a LoadBalancer IP (an address conflict) is not judged until every node is watched.
 */
function Unwatched({ nodes }: { nodes: Summary["unwatchedNodes"] }) {
  if (nodes === null || nodes.length === 0) return null;
  const shown = nodes.length > 5 ? `${nodes.slice(0, 5).join(", ")} and ${nodes.length - 5} more` : nodes.join(", ");
  return (
    <div className="banner warn" role="status" data-testid="unwatched">
      <strong>
        {nodes.length} node{nodes.length === 1 ? " has" : "s have"} no live agent
      </strong>{" "}
      ({shown}): their answers cannot be seen, and until every node is watched whohas does not judge address conflicts (a MAC of such a node
      would look like another host&apos;s). Run the agent DaemonSet on every node; the Nodes page shows which agents are down.
    </div>
  );
}

/** LimitWarning tells that the tracking limits were hit, what that cost, and which keys raise them. */
function LimitWarning({ limits }: { limits: Summary["limits"] }) {
  if (limits.lastHit === null) return null;
  const byMemory = limits.ipLimit < limits.maxIps;
  const heap = limits.heap === null ? "" : ` (V8 heap ${limits.heap.usedMb} of ${limits.heap.limitMb} MB at its latest full collection)`;
  return (
    <div className="banner warn" role="status" data-testid="limit-warning">
      <strong>Tracking limit reached</strong> (<Ago t={limits.lastHit} />
      ):{" "}
      {byMemory
        ? `the hub's memory came near its bound, so the live view holds at most ${limits.ipLimit.toLocaleString()} IPs, not limits.maxIps = ${limits.maxIps.toLocaleString()}${heap}; it grows back as memory allows. `
        : null}
      {limits.evictedIps > 0
        ? `${limits.evictedIps.toLocaleString()} least recently active IPs left the live view at its IP limit (their history stays in storage)`
        : null}
      {limits.evictedIps > 0 && limits.foldedMacs > 0 ? "; " : null}
      {limits.foldedMacs > 0
        ? `an IP's least recently seen MAC was summed into its "folded" line ${limits.foldedMacs.toLocaleString()} times, at limits.maxMacsPerIp = ${limits.maxMacsPerIp}`
        : null}
      . LoadBalancer IPs and IPs with an open incident always stay.{" "}
      {byMemory
        ? "Give the hub more memory: WHOHAS_HEAP_MB, and the container's limit above it."
        : "A segment this large, or a flood of made-up addresses? Raise the limits in the hub's config if the network is really this big."}
    </div>
  );
}

/** The Overview answers "am I affected?" in one screen. */
export function Overview() {
  const trpc = useTRPC();
  const cluster = useLive(useQuery(trpc.cluster.summary.queryOptions()), useSubscription(trpc.cluster.live.subscriptionOptions()));
  const ips = useIps();
  const agents = useLive(useQuery(trpc.agents.list.queryOptions()), useSubscription(trpc.agents.live.subscriptionOptions()));
  const incidents = useLive(
    useQuery(trpc.incidents.list.queryOptions({ state: "open" })),
    useSubscription(trpc.incidents.live.subscriptionOptions({ filter: { state: "open" } })),
  );
  const error = cluster.error ?? ips.error ?? agents.error;
  if (error !== null) return <Failure message={error} />;
  if (cluster.data === undefined || ips.data === undefined || agents.data === undefined) return <Skeleton rows={6} />;
  const c = cluster.data;
  const list = ips.data;
  const has = (ip: Ip, type: string) => ip.findings.some((f) => f.type === type);
  const counts = {
    healthy: list.filter((i) => i.state === "single" && i.findings.length === 0).length,
    multi: list.filter((i) => i.state === "multi-responder").length,
    wrongOwner: list.filter((i) => has(i, "wrong-owner")).length,
    noResponder: list.filter((i) => has(i, "no-responder")).length,
    splitBrain: list.filter((i) => has(i, "split-brain")).length,
    silentDrop: list.filter((i) => i.silentDropNodes.length > 0).length,
  };
  const online = agents.data.filter((a) => a.up).length;
  const multi = list.filter((i) => i.state === "multi-responder");
  const changing = list
    .filter((i) => i.changesPerHour > 0)
    .sort((a, b) => b.changesPerHour - a.changesPerHour || a.ip.localeCompare(b.ip))
    .slice(0, 5);
  const ipvs = c.kubeProxy !== null && c.kubeProxy.error === null && c.kubeProxy.mode === "ipvs";

  return (
    <>
      <StaleInventory stale={c.inventoryStale} />
      <LimitWarning limits={c.limits} />
      <Unwatched nodes={c.unwatchedNodes} />
      {multi.length > 0 ? (
        <div className="banner bad" role="alert" data-testid="banner">
          <strong>
            {multi.length} IP{multi.length > 1 ? "s are" : " is"} answered by several nodes.
          </strong>{" "}
          Clients cache whichever MAC answers first; with externalTrafficPolicy Local the wrong node silently drops the traffic (&quot;it
          worked for a minute, then timeouts&quot;).{" "}
          {c.strictArp.looseIpvsNodes.length > 0 || ipvs ? (
            <>
              kube-proxy in IPVS mode with <code>strictARP: false</code> makes every node answer for every IP on kube-ipvs0: set{" "}
              <code>ipvs.strictARP: true</code> in ConfigMap kube-system/kube-proxy and restart the kube-proxy DaemonSet (
              <code>kubectl -n kube-system rollout restart ds/kube-proxy</code>), then flush the clients&apos; stale entries (
              <code>ip neigh flush to IP</code>).{" "}
              <Link href="/fix" className="fix-link" data-testid="fix-link">
                Fix strictARP from here
              </Link>
            </>
          ) : (
            <>Check for two speakers announcing the same IP (split brain) and for nodes answering ARP for addresses they hold.</>
          )}
        </div>
      ) : list.length > 0 ? (
        <div className="banner ok" data-testid="banner">
          Every IP seen has at most one responder.
        </div>
      ) : null}

      <section className="cards" aria-label="summary">
        <Card label="healthy" value={counts.healthy} tone="ok" />
        <Card label="several responders" value={counts.multi} tone={counts.multi > 0 ? "bad" : "ok"} testId="count-multi" />
        <Card label="wrong owner" value={counts.wrongOwner} tone={counts.wrongOwner > 0 ? "bad" : "ok"} />
        <Card label="no responder" value={counts.noResponder} tone={counts.noResponder > 0 ? "warn" : "ok"} />
        <Card label="split brain" value={counts.splitBrain} tone={counts.splitBrain > 0 ? "bad" : "ok"} />
        <Card label="silent-drop risk" value={counts.silentDrop} tone={counts.silentDrop > 0 ? "bad" : "ok"} />
        <Card
          label={`agents online of ${agents.data.length}`}
          value={online}
          tone={online < agents.data.length ? "warn" : "ok"}
          testId="count-agents"
        />
        <Card
          label="open incidents"
          value={incidents.data?.length ?? 0}
          tone={(incidents.data?.length ?? 0) > 0 ? "bad" : "ok"}
          href="/incidents"
        />
      </section>

      <h2>kube-proxy and strictARP</h2>
      <p data-testid="cluster">
        {c.kubernetes === "off"
          ? "No Kubernetes access: traffic-only mode. Services, expected owners and the kube-proxy configuration are not shown (set kubernetes.kubeconfig, or run the hub in the cluster)."
          : c.kubeProxy === null
            ? "Kubernetes: connected. The kube-proxy ConfigMap (kube-system/kube-proxy) was not found: not a kubeadm-style cluster, or no permission."
            : c.kubeProxy.error !== null
              ? `Kubernetes: connected. kube-proxy config unreadable: ${c.kubeProxy.error}`
              : `Kubernetes: connected. kube-proxy mode ${c.kubeProxy.mode}, strictARP ${c.kubeProxy.strictARP ? "true" : "false"} (configured)${c.metallb ? ", MetalLB installed" : ""}.`}{" "}
        <span data-testid="strictarp-effective" data-verdict={c.strictArp.verdict}>
          {c.strictArp.verdict === "unknown"
            ? "Effective: no agent has reported yet."
            : c.strictArp.looseIpvsNodes.length === 0
              ? `Effective: every node (${c.strictArp.nodes.length}) answers ARP only for its own addresses.`
              : `Effective: ${c.strictArp.looseIpvsNodes.join(", ")} answer${c.strictArp.looseIpvsNodes.length === 1 ? "s" : ""} ARP for every kube-ipvs0 address.`}
        </span>
        {c.kubeProxyRollout === null ? null : (
          <span className="muted">
            {" "}
            kube-proxy DaemonSet: {c.kubeProxyRollout.available}/{c.kubeProxyRollout.desired} available
            {c.kubeProxyRollout.complete ? "" : ", rollout in progress"}.
          </span>
        )}
      </p>
      {c.strictArp.nodes.length === 0 ? (
        online > 0 ? (
          <Empty>
            {online} agent{online === 1 ? " is" : "s are"} connected, and none has reported its node&apos;s ARP settings yet: agents report
            them as they connect, and again every few seconds.
          </Empty>
        ) : (
          <Empty>
            No agent connected: deploy the whohas agent DaemonSet (README, &quot;Running the agent&quot;) to see each node&apos;s ARP
            behaviour.
          </Empty>
        )
      ) : (
        <table data-testid="strictarp-nodes">
          <Head cols={["Node", "arp_ignore / arp_announce (effective)", "Answers ARP", "kube-ipvs0", "Drift from the configuration"]} />
          <tbody>
            {c.strictArp.nodes.map((n) => {
              const drift = c.strictArp.drift.find((d) => d.node === n.node);
              return (
                <tr key={n.node} data-node={n.node} className={drift === undefined ? undefined : "drift"}>
                  <td>{n.node}</td>
                  <td className="mono">
                    {n.arpIgnore} / {n.arpAnnounce}
                  </td>
                  <td className={n.strict ? "state-single" : n.ipvs ? "state-multi-responder" : undefined}>
                    {n.strict ? "only for its own addresses" : "for any local address"}
                  </td>
                  <td>{n.ipvs ? `${n.kubeIpvs0Addresses} addresses (IPVS)` : "absent"}</td>
                  <td data-testid="drift" data-reason={drift?.reason ?? ""}>
                    {drift === undefined ? <span className="muted">none</span> : drift.message}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}

      <h2>IPs with several responders</h2>
      {multi.length === 0 ? (
        <Empty>{list.length === 0 ? "No ARP traffic seen yet: agents report as soon as a client asks for an IP." : "None."}</Empty>
      ) : (
        <ul className="problems" data-testid="problem-ips">
          {multi.slice(0, 20).map((ip) => (
            <li key={ip.ip}>
              <Link href={ipHref(ip.ip)} className="mono">
                <IpName ipKey={ip.ip} />
              </Link>{" "}
              {ip.services.map((s) => `${s.namespace}/${s.name}`).join(", ")} · answered by{" "}
              {ip.responders
                .filter((r) => r.answering)
                .map((r) => r.node ?? r.mac)
                .join(", ")}
              {ip.expectedOwner === null ? null : <span className="muted"> · owner {ip.expectedOwner.node}</span>} · seen{" "}
              <Ago t={ip.lastRequest} />
            </li>
          ))}
          {multi.length > 20 ? (
            <li>
              <Link href="/ips?state=multi-responder">all {multi.length}</Link>
            </li>
          ) : null}
        </ul>
      )}

      <Churn ips={changing} seen={list.length > 0} />
    </>
  );
}

/**
 * Churn ranks the IPs whose askers see the first answer change node most often: each change is a router, firewall or
 * client re-learning the IP's MAC from another node, and its connections through the old one dropping.
 */
function Churn({ ips, seen }: { ips: readonly Ip[]; seen: boolean }) {
  return (
    <>
      <h2>Where connections drop: first-answer changes</h2>
      {ips.length === 0 ? (
        <Empty>
          {seen
            ? "No asker saw the first answer to its requests come from another node in the last hour: routers and clients keep the MAC they learnt."
            : "No ARP traffic seen yet: each asker's first-answer changes are counted as soon as it asks for an IP."}
        </Empty>
      ) : (
        <ol className="problems" data-testid="churn-ips">
          {ips.map((ip) => (
            <li key={ip.ip} data-churn-ip={ip.ip}>
              <Link href={`${ipHref(ip.ip)}#askers-title`} className="mono">
                <IpName ipKey={ip.ip} />
              </Link>{" "}
              {ip.services.map((s) => `${s.namespace}/${s.name}`).join(", ")} · {ip.changesPerHour} first-answer change
              {ip.changesPerHour === 1 ? "" : "s"} per hour, for {ip.askersChanged} asker{ip.askersChanged === 1 ? "" : "s"}
            </li>
          ))}
        </ol>
      )}
    </>
  );
}

function Card({
  label,
  value,
  tone,
  testId,
  href,
}: {
  label: string;
  value: number;
  tone: "ok" | "bad" | "warn";
  testId?: string;
  href?: string;
}) {
  const body = (
    <>
      <span className="card-value">{value}</span>
      <span className="card-label">{label}</span>
    </>
  );
  return (
    <div className={`card card-${tone}`} data-testid={testId}>
      {href === undefined ? body : <Link href={href}>{body}</Link>}
    </div>
  );
}

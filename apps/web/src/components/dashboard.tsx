"use client";

import { useQuery } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import type { RouterOutputs } from "~/server/api";
import { useTRPC } from "~/trpc/react";

type Ip = RouterOutputs["ips"]["list"][number];
type AgentRow = RouterOutputs["agents"]["list"][number];

const STATE_TEXT: Record<Ip["state"], string> = {
  "multi-responder": "several responders",
  "no-responder": "no responder",
  single: "one responder",
  idle: "idle",
};

function ago(t: number | null): string {
  if (t === null) return "never";
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  return s < 60 ? `${s}s ago` : `${Math.round(s / 60)}m ago`;
}

/** Dashboard shows each IP with the MACs (and nodes) answering for it, live. */
export function Dashboard() {
  const trpc = useTRPC();
  const first = useQuery(trpc.ips.list.queryOptions());
  const live = useSubscription(trpc.ips.live.subscriptionOptions());
  const firstAgents = useQuery(trpc.agents.list.queryOptions());
  const liveAgents = useSubscription(trpc.agents.live.subscriptionOptions());
  // Subscriptions carry tracked events ({ id, data }): the id lets a reconnecting client resume without a resend.
  const ips: Ip[] = live.data?.data ?? first.data ?? [];
  const firstCluster = useQuery(trpc.cluster.summary.queryOptions());
  const liveCluster = useSubscription(trpc.cluster.live.subscriptionOptions());
  const cluster = liveCluster.data?.data ?? firstCluster.data;
  const agents: AgentRow[] = liveAgents.data?.data ?? firstAgents.data ?? [];
  const firstIncidents = useQuery(trpc.incidents.list.queryOptions({ state: "open" }));
  const liveIncidents = useSubscription(trpc.incidents.live.subscriptionOptions({ filter: { state: "open" } }));
  const openIncidents = liveIncidents.data?.data ?? firstIncidents.data ?? [];
  const multi = ips.filter((i) => i.state === "multi-responder");

  return (
    <>
      {multi.length > 0 ? (
        <div className="banner bad" role="alert" data-testid="banner">
          <strong>{multi.length} IP{multi.length > 1 ? "s are" : " is"} answered by several nodes.</strong> Clients cache
          whichever MAC answers first; with externalTrafficPolicy Local the wrong node silently drops the traffic. With
          kube-proxy in IPVS mode this is <code>strictARP: false</code>: set <code>ipvs.strictARP: true</code> in the
          kube-system/kube-proxy ConfigMap and restart kube-proxy.
        </div>
      ) : ips.length > 0 ? (
        <div className="banner ok" data-testid="banner">Every IP seen has at most one responder.</div>
      ) : null}

      {cluster === undefined ? null : (
        <p className="muted" data-testid="cluster">
          {cluster.kubernetes === "off"
            ? "Kubernetes: not connected (traffic only): Services and expected owners are not shown."
            : cluster.kubeProxy === null
              ? "Kubernetes: connected. kube-proxy ConfigMap not found."
              : cluster.kubeProxy.error !== null
                ? `Kubernetes: connected. kube-proxy config unreadable: ${cluster.kubeProxy.error}`
                : `Kubernetes: connected. kube-proxy mode ${cluster.kubeProxy.mode}, strictARP ${cluster.kubeProxy.strictARP ? "true" : "false"} (configured)${cluster.metallb ? ", MetalLB installed" : ""}.`}{" "}
          <span data-testid="strictarp-effective" data-verdict={cluster.strictArp.verdict}>
            {cluster.strictArp.verdict === "unknown"
              ? "Effective: no agent has reported yet."
              : cluster.strictArp.looseIpvsNodes.length === 0
                ? `Effective: every node (${cluster.strictArp.nodes.length}) answers ARP only for its own addresses.`
                : `Effective: ${cluster.strictArp.looseIpvsNodes.join(", ")} answer${cluster.strictArp.looseIpvsNodes.length === 1 ? "s" : ""} ARP for every kube-ipvs0 address.`}
          </span>
          {cluster.kubeProxyRollout === null ? null : (
            <span className="muted"> kube-proxy DaemonSet: {cluster.kubeProxyRollout.available}/{cluster.kubeProxyRollout.desired} available{cluster.kubeProxyRollout.complete ? "" : ", rollout in progress"}.</span>
          )}
        </p>
      )}
      {cluster !== undefined && cluster.strictArp.drift.length > 0 ? (
        <ul className="drift" data-testid="drift">
          {cluster.strictArp.drift.map((d) => (
            <li key={d.node} data-node={d.node} data-reason={d.reason}>
              {d.message}
            </li>
          ))}
        </ul>
      ) : null}
      <p className="muted" data-testid="incidents-open">
        {openIncidents.length === 0 ? "No open incidents." : `${openIncidents.length} open incident${openIncidents.length === 1 ? "" : "s"}: ${[...new Set(openIncidents.map((i) => i.type))].join(", ")}.`}
      </p>

      <h2>LoadBalancer IPs</h2>
      {ips.length === 0 ? (
        <p className="muted" data-testid="empty">
          No ARP traffic seen yet. Agents report here as soon as any client asks for an IP; {agents.filter((a) => a.up).length} of{" "}
          {agents.length} agents are online. Start one with <code>whohas agent --hub ws://THIS_HOST:3000/agent --token-file FILE</code>.
        </p>
      ) : (
        <table data-testid="ips">
          <thead>
            <tr>
              <th>IP</th>
              <th>Service</th>
              <th>Expected owner</th>
              <th>State</th>
              <th>Responders (node, MAC, replies, last answer)</th>
              <th>Findings</th>
              <th>Requests</th>
            </tr>
          </thead>
          <tbody>
            {ips.map((ip) => (
              <tr key={ip.ip} data-ip={ip.ip} data-state={ip.state}>
                <td className="mono">{ip.ip}</td>
                <td data-testid="services">
                  {ip.services.length === 0 ? <span className="muted">-</span> : ip.services.map((s) => `${s.namespace}/${s.name}${s.externalTrafficPolicy === "Local" ? " (ETP Local)" : ""}`).join(", ")}
                </td>
                <td data-testid="owner" data-owner={ip.expectedOwner?.node ?? ""} data-source={ip.expectedOwner?.source ?? ""}>
                  {ip.expectedOwner === null ? <span className="muted">unknown</span> : <>{ip.expectedOwner.node} <span className="muted">({ip.expectedOwner.source})</span></>}
                </td>
                <td className={`state state-${ip.state}`}>
                  {STATE_TEXT[ip.state]}
                  {ip.silentDropNodes.length > 0 ? (
                    <span className="responder state-multi-responder" data-testid="silent-drop">
                      silent drop: {ip.silentDropNodes.join(", ")} answer{ip.silentDropNodes.length === 1 ? "s" : ""} but host{ip.silentDropNodes.length === 1 ? "s" : ""} no endpoint (ETP Local)
                    </span>
                  ) : null}
                </td>
                <td>
                  {ip.responders.length === 0 ? <span className="muted">none</span> : null}
                  {ip.responders.map((r) => (
                    <span key={r.mac} className={`responder ${r.answering ? "answering" : "stale"}${ip.expectedOwner !== null && r.answering && r.node !== ip.expectedOwner.node ? " wrong" : ""}`} data-testid="responder" data-node={r.node ?? ""} data-mac={r.mac} data-answering={r.answering}>
                      <strong>{r.node ?? "unknown node"}</strong> <span className="mono">{r.mac}</span> · {r.replies} replies
                      {r.meanLatencyMs === null ? "" : ` · ${r.meanLatencyMs.toFixed(2)} ms`}
                      {ip.fastest === r.mac && ip.state === "multi-responder" ? <span data-testid="fastest"> · usually first</span> : null}
                      {r.gratuitous > 0 ? ` · ${r.gratuitous} gratuitous` : ""} · {ago(r.lastSeen)}
                    </span>
                  ))}
                </td>
                <td data-testid="findings">
                  {ip.findings.length === 0 ? <span className="muted">none</span> : null}
                  {ip.findings.map((f) => (
                    <span key={f.type} className="responder" data-finding={f.type} title={f.detail}>
                      {f.type} <span className="muted">since {ago(f.firstSeen)}</span>
                    </span>
                  ))}
                </td>
                <td data-testid="requests">
                  {ip.requests} <span className="muted">(last {ago(ip.lastRequest)})</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <section className="agents">
        <h2>Agents</h2>
        {agents.length === 0 ? (
          <p className="muted">No agent has connected yet.</p>
        ) : (
          <table data-testid="agents">
            <thead>
              <tr>
                <th>Node</th>
                <th>Status</th>
                <th>Captured interfaces (effective arp_ignore / arp_announce)</th>
                <th>kube-ipvs0</th>
                <th>Capture</th>
                <th>Version</th>
              </tr>
            </thead>
            <tbody>
              {agents.map((a) => {
                const f = a.facts;
                const captured = f?.interfaces.filter((i) => i.captured) ?? [];
                return (
                  <tr key={a.node} data-node={a.node}>
                    <td>{a.node}</td>
                    <td className={a.up ? "state-single" : "state-multi-responder"}>{a.up ? "online" : "down"}</td>
                    <td className="mono">
                      {f === null
                        ? a.interfaces.map((i) => `${i.name} ${i.mac}`).join(", ")
                        : captured.map((i) => (
                            <span key={i.name} className="responder" data-iface={i.name} data-arp-ignore={i.effective.arpIgnore} data-arp-announce={i.effective.arpAnnounce}>
                              {i.name} {i.mac} · {i.effective.arpIgnore}/{i.effective.arpAnnounce}
                              {i.effective.arpIgnore >= 1 && i.effective.arpAnnounce >= 2 ? " (strict)" : " (answers for kube-ipvs0 addresses)"}
                            </span>
                          ))}
                    </td>
                    <td data-testid="ipvs">{f === null ? "?" : f.kubeIpvs0.present ? `${f.kubeIpvs0.addresses} addresses (IPVS mode)` : "absent"}</td>
                    <td>{f === null ? "?" : `${f.capture.frames} frames, ${f.capture.kernelDropped} kernel drops`}</td>
                    <td>{a.version}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

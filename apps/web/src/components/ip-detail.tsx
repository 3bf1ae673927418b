"use client";

import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import type { RouterOutputs } from "~/server/api";
import { useTRPC } from "~/trpc/react";
import { BackgroundProbeLine } from "./background-probe";
import { IpActions } from "./ip-actions";
import { GroupAnnounce } from "./group-announce";
import { IpTimeline } from "./ip-timeline";
import { useLive } from "./ui/live";
import { Empty, Failure, Skeleton } from "./ui/states";
import { Head } from "./ui/table";
import { Ago } from "./ui/time";
import { ANNOUNCER_NAMES, ownerSourceName } from "./ui/ips-view";
import { IpName } from "./ui/ip-name";

type AskerRow = NonNullable<RouterOutputs["ips"]["byIp"]>["askers"][number];

/**
 * Askers shows who asks for the IP and how often the first answer it got came from another node than the time
 * before: each change is a router, firewall or client re-learning the IP's MAC, and its connections through the old
 * node dropping.
 */
function Askers({ askers }: { askers: readonly AskerRow[] }) {
  return (
    <>
      <h2 id="askers-title">Askers</h2>
      {askers.length === 0 ? (
        <Empty>
          No client request for this IP has been seen in the last hour. Once a router, firewall or client asks, it is listed here with how
          often the first answer it got came from another node than the time before (a first-answer change): each one drops its connections
          through the old node.
        </Empty>
      ) : (
        <table data-testid="askers" aria-labelledby="askers-title">
          <thead>
            <tr>
              <th scope="col">Asker</th>
              <th scope="col">Requests</th>
              <th scope="col" title="times the first answer came from another node than to its previous answered request">
                First-answer changes
              </th>
              <th scope="col" title="over the last hour, or since the asker was first seen when that is shorter (at least a minute)">
                Per hour
              </th>
              <th scope="col">Last change</th>
            </tr>
          </thead>
          <tbody>
            {askers.map((a) => (
              <tr
                key={`${a.ip}-${a.mac ?? ""}`}
                data-testid="asker"
                data-asker-ip={a.ip}
                data-asker-mac={a.mac ?? ""}
                data-changes={a.firstAnswerChanges}
                className={a.changesPerHour > 0 ? "wrong" : undefined}
              >
                <td>
                  <span className="mono">{a.ip}</span> <span className="mono muted">{a.mac ?? "MAC not reported"}</span>
                </td>
                <td>{a.requests}</td>
                <td>{a.firstAnswerChanges}</td>
                <td>{a.changesPerHour}</td>
                <td>{a.lastChange === null ? <span className="muted">never</span> : <Ago t={a.lastChange} />}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** IpDetail is everything about one IP: who answers, the timeline, the Service's endpoints, incidents, the fix. */
export function IpDetail({ ip }: { ip: string }) {
  const trpc = useTRPC();
  const view = useLive(useQuery(trpc.ips.byIp.queryOptions({ ip })), useSubscription(trpc.ips.byIpLive.subscriptionOptions({ ip })));
  const incidents = useQuery({ ...trpc.incidents.list.queryOptions({ ip, state: "all", limit: 50 }), refetchInterval: 5000 });

  if (view.error !== null) return <Failure message={view.error} />;
  if (view.loading) return <Skeleton rows={8} />;
  const v = view.data;
  if (v === null || v === undefined)
    return (
      <Empty>
        whohas has seen no traffic and no LoadBalancer Service for {ip}. <Link href="/ips">All IPs</Link>
      </Empty>
    );
  const owner = v.expectedOwner?.node ?? null;
  const answering = v.responders.filter((r) => r.answering);

  return (
    <>
      <h1 className="mono">
        <IpName ipKey={v.ip} />{" "}
        <span className={`state state-${v.state}`} data-testid="ip-state" data-state={v.state}>
          {v.state}
        </span>
      </h1>
      <p>
        {v.services.length === 0 ? (
          <span className="muted">No Service known for this IP (traffic-only, or not a LoadBalancer IP).</span>
        ) : (
          v.services.map((s) => (
            <span key={`${s.namespace}/${s.name}`} className="chip">
              {s.namespace}/{s.name} · ETP {s.externalTrafficPolicy} · {s.ports.map((p) => `${p.port}/${p.protocol}`).join(", ")}
            </span>
          ))
        )}
        {v.pool === null ? null : <span className="muted"> pool {v.pool}</span>}
      </p>
      <p data-testid="announcer" data-announcer={v.announcer ?? ""}>
        Announced by:{" "}
        {v.announcer === null ? <span className="muted">no announcer recognised</span> : <strong>{ANNOUNCER_NAMES[v.announcer]}</strong>}
        {v.interfaces === null ? null : (
          <span className="muted">
            {" "}
            on {v.interfaces.patterns ? "interfaces matching" : "interfaces"} {v.interfaces.names.join(", ")}
          </span>
        )}
      </p>
      <p data-testid="expected-owner" data-source={v.expectedOwner?.source ?? ""}>
        Expected owner: {owner === null ? <span className="muted">unknown</span> : <strong>{owner}</strong>}{" "}
        {v.expectedOwner === null ? null : <span className="muted">({ownerSourceName(v.expectedOwner.source)})</span>}
        {v.ownerUnknown === null ? null : (
          <span className="muted" data-testid="owner-unknown">
            {" "}
            ({v.ownerUnknown})
          </span>
        )}
      </p>

      {v.findings
        .filter((f) => f.type === "stale-announcer")
        .map((f) => (
          <p key={f.incidentId} className="banner bad" role="alert" data-testid="stale-announcer">
            {f.detail} (the <strong>Force re-announce</strong> button is below: the owner then sends MetalLB&apos;s gratuitous
            announcements).
          </p>
        ))}

      <IpActions ip={v.ip} owner={owner} ownerUnknown={v.ownerUnknown} />
      {v.announcer === "metallb-bgp" ? null : <GroupAnnounce services={v.services} pool={v.pool} />}

      <h2>Who answers</h2>
      {v.responders.length === 0 ? (
        <Empty>Nobody has answered for this IP yet.</Empty>
      ) : (
        <table data-testid="responders">
          <Head cols={["Node", "MAC", "Answering now", "Replies", "Mean reply delay", "Announcements", "Last seen"]} />
          <tbody>
            {v.responders.map((r) => (
              <tr
                key={r.mac}
                data-testid="responder"
                data-node={r.node ?? ""}
                data-mac={r.mac}
                data-answering={r.answering}
                className={owner !== null && r.answering && r.node !== owner ? "wrong" : undefined}
              >
                <td>
                  {r.node ?? (
                    <strong className="bad-text" data-testid="stranger" title="no whohas agent reports this MAC as its node's">
                      not a cluster node
                    </strong>
                  )}
                  {r.node === owner ? " (owner)" : null}
                  <span className="muted" data-testid="vendor">
                    {" "}
                    {r.vendor ?? (r.node === null ? "vendor not registered" : "")}
                  </span>
                  {v.fastest === r.mac && answering.length > 1 ? (
                    <span className="chip" data-testid="fastest">
                      usually first
                    </span>
                  ) : null}
                </td>
                <td className="mono">{r.mac}</td>
                <td>{r.answering ? "yes" : "no"}</td>
                <td>{r.replies}</td>
                <td>
                  {r.meanLatencyMs === null ? (
                    <span className="muted">-</span>
                  ) : r.meanLatencyMs < 1 ? (
                    `${Math.round(r.meanLatencyMs * 1000)} µs`
                  ) : (
                    `${r.meanLatencyMs.toFixed(1)} ms`
                  )}
                </td>
                <td data-testid="announcements" data-count={r.gratuitous}>
                  {r.gratuitous}{" "}
                  {r.lastGratuitous === null ? null : (
                    <span className="muted">
                      (last <Ago t={r.lastGratuitous} />)
                    </span>
                  )}
                </td>
                <td>
                  <Ago t={r.lastSeen} />
                </td>
              </tr>
            ))}
            {v.folded === null ? null : (
              <tr data-testid="folded" className="muted">
                <td colSpan={3}>
                  {v.folded.macs.toLocaleString()} more MAC{v.folded.macs === 1 ? "" : "s"}, summed (limits.maxMacsPerIp: the least recently
                  seen are folded)
                </td>
                <td>{v.folded.replies}</td>
                <td />
                <td>{v.folded.gratuitous}</td>
                <td>
                  <Ago t={v.folded.lastSeen} />
                </td>
              </tr>
            )}
          </tbody>
        </table>
      )}
      {v.silentDropNodes.length > 0 ? (
        <p className="banner bad" role="alert" data-testid="silent-drop">
          Silent drop: {v.silentDropNodes.join(", ")} answer{v.silentDropNodes.length === 1 ? "s" : ""} for {v.address} but host
          {v.silentDropNodes.length === 1 ? "s" : ""} no endpoint of this externalTrafficPolicy Local Service: a client that caches{" "}
          {v.silentDropNodes.length === 1 ? "its" : "their"} MAC sends traffic kube-proxy drops without a word.
        </p>
      ) : null}
      <p className="muted" data-testid="endpoints">
        Endpoints run on: {v.endpointNodes.length === 0 ? "no node known" : v.endpointNodes.join(", ")}.
      </p>
      {v.services.length > 0 ? <BackgroundProbeLine ip={ip} /> : null}

      <Askers askers={v.askers} />

      <h2>Handovers</h2>
      {v.handovers.length === 0 ? (
        <Empty>No handover seen: the IP has not moved between MACs since the hub started watching it.</Empty>
      ) : (
        <table data-testid="handovers">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">From</th>
              <th scope="col">To</th>
              <th scope="col" title="from the old owner's last reply to the new owner's first">
                Gap
              </th>
              <th scope="col">Unanswered requests</th>
              <th scope="col" title="whether the new owner sent a gratuitous announcement for its takeover">
                Announced
              </th>
            </tr>
          </thead>
          <tbody>
            {v.handovers.map((h) => (
              <tr
                key={`${h.at}-${h.to.mac}`}
                data-testid="handover"
                data-from={h.from.node ?? h.from.mac}
                data-to={h.to.node ?? h.to.mac}
                className={h.announced === false ? "wrong" : undefined}
              >
                <td>
                  <Ago t={h.at} />
                </td>
                <td>
                  {h.from.node ?? <span className="muted">unknown node</span>} <span className="mono muted">{h.from.mac}</span>
                </td>
                <td>
                  {h.to.node ?? <span className="muted">unknown node</span>} <span className="mono muted">{h.to.mac}</span>
                </td>
                <td>{h.gapMs < 1000 ? `${Math.round(h.gapMs)} ms` : `${(h.gapMs / 1000).toFixed(1)} s`}</td>
                <td>{h.unanswered}</td>
                <td>
                  {h.announced === null ? (
                    <span className="muted">not yet known</span>
                  ) : h.announced ? (
                    "yes"
                  ) : (
                    "no: clients that cached the old MAC keep sending there"
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Timeline</h2>
      <IpTimeline view={v} incidents={incidents.data ?? []} />

      <h2>Incidents</h2>
      {(incidents.data ?? []).length === 0 ? (
        <Empty>No incident for this IP.</Empty>
      ) : (
        <ul data-testid="ip-incidents">
          {(incidents.data ?? []).map((i) => (
            <li key={i.id}>
              <Link href={`/incidents/${i.id}`}>
                #{i.id} {i.type}
              </Link>{" "}
              · {i.detail} · opened <Ago t={i.firstSeen} />
              {i.resolvedAt === null ? (
                <strong className="state-multi-responder"> open</strong>
              ) : (
                <>
                  {" "}
                  · resolved <Ago t={i.resolvedAt} />
                </>
              )}
            </li>
          ))}
        </ul>
      )}

      <h2>Fixing it</h2>
      <p>On a client that cached the wrong MAC, drop the stale entry (it re-resolves on the next packet):</p>
      <pre data-testid="client-fix">{`ip neigh flush to ${v.address}\n# or, for one interface:\nip neigh del ${v.address} dev IFACE`}</pre>
      <p>
        From a node, count who answers each request for a minute (<code>whohas probe</code>), or make the expected owner announce the IP
        again with MetalLB&apos;s frames (<code>whohas announce</code>; run it on the owner only, or it creates the conflict you are
        fixing):
      </p>
      <pre>{`whohas probe ${v.ip} --duration 60s --interval 1s\nwhohas announce ${v.ip} --force${owner === null ? "   # on the owner only" : `   # on ${owner} only`}`}</pre>
    </>
  );
}

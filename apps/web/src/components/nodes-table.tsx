"use client";

import { useQuery } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import { useTRPC } from "~/trpc/react";
import { useLive } from "./ui/live";
import { Head } from "./ui/table";
import { Empty, Failure, Skeleton } from "./ui/states";
import { Ago } from "./ui/time";

/** NodesTable: per node, its agent and what its kernel does with ARP. */
export function NodesTable() {
  const trpc = useTRPC();
  const nodes = useLive(useQuery(trpc.nodes.list.queryOptions()), useSubscription(trpc.nodes.live.subscriptionOptions()));
  if (nodes.error !== null) return <Failure message={nodes.error} />;
  if (nodes.data === undefined) return <Skeleton rows={4} />;
  if (nodes.data.length === 0)
    return <Empty>No agent connected: deploy the whohas agent DaemonSet (README, &quot;Running the agent&quot;).</Empty>;
  return (
    <table data-testid="nodes">
      <Head cols={["Node", "Agent", "Version", "Interfaces (effective arp_ignore / arp_announce)", "ARP", "kube-ipvs0", "Capture"]} />
      <tbody>
        {nodes.data.map((n) => {
          const f = n.facts;
          return (
            <tr key={n.node} data-node={n.node} data-up={n.up}>
              <td className="nowrap">{n.node}</td>
              <td className={n.up ? "state-single" : "state-multi-responder"}>
                {n.up ? "online" : n.connected ? "silent" : "down"}{" "}
                <span className="muted">
                  (seen <Ago t={n.lastSeen} />)
                </span>
              </td>
              <td>{n.version}</td>
              <td className="mono">
                {f === null
                  ? n.interfaces.map((i) => (
                      <span key={i.name} className="block" data-iface={i.name}>
                        {i.name} {i.mac}
                      </span>
                    ))
                  : f.interfaces
                      .filter((i) => i.captured)
                      .map((i) => (
                        <span
                          key={i.name}
                          className="block"
                          data-iface={i.name}
                          data-arp-ignore={i.effective.arpIgnore}
                          data-arp-announce={i.effective.arpAnnounce}
                        >
                          {i.name} {i.mac} · {i.effective.arpIgnore}/{i.effective.arpAnnounce}
                        </span>
                      ))}
              </td>
              <td className={n.arp === null ? undefined : n.arp.strict ? "state-single" : "state-multi-responder"} data-testid="arp">
                {n.arp === null ? (
                  <span className="muted">not reported yet</span>
                ) : n.arp.strict ? (
                  "only its own addresses"
                ) : (
                  "any local address"
                )}
              </td>
              <td>{f === null ? "?" : f.kubeIpvs0.present ? `${f.kubeIpvs0.addresses} addresses (IPVS mode)` : "absent"}</td>
              <td>
                {f === null ? "?" : `${f.capture.frames} frames · ${f.capture.kernelDropped} kernel drops · ${n.dropped} buffer drops`}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

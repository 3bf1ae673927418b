"use client";

import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "~/trpc/react";
import { whoText } from "./ui/stranger";
import { Ago } from "./ui/time";

/**
 * BackgroundProbeLine says what the hub's background probe last heard for a LoadBalancer IP: the one request a node
 * sends for it every interval, which hears hosts that answer only off-cluster clients (by unicast, past the agents).
 */
export function BackgroundProbeLine({ ip }: { ip: string }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.ips.backgroundProbe.queryOptions({ ip }), refetchInterval: 5000 });
  const p = q.data;
  if (p === undefined) return null;
  if (!p.enabled)
    return (
      <p className="muted" data-testid="background-probe" data-state="off">
        Background probe: off (backgroundProbe.interval), so a host that answers only clients outside the cluster goes unseen.
      </p>
    );
  const every = `every ${Math.round(p.intervalMs / 1000)} s`;
  const last = p.last;
  if (last === null)
    return (
      <p className="muted" data-testid="background-probe" data-state="waiting">
        Background probe: asks for this IP {every} from one node in turn; not asked yet.
      </p>
    );
  const heard =
    last.failed !== null
      ? `failed: ${last.failed}`
      : last.macs === null
        ? "listening for answers"
        : last.answeredBy.length === 0
          ? "no other host answered it (a node does not hear its own answer)"
          : `answered by ${last.answeredBy.map(whoText).join(", ")}`;
  return (
    <p className="muted" data-testid="background-probe" data-state={last.failed === null ? "ok" : "failed"}>
      Background probe ({every}, one node in turn): asked from {last.node} <Ago t={last.at} />, {heard}.
    </p>
  );
}

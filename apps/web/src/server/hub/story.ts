import { subjectCluster, subjectIsIp, subjectNode, type Handover, type StrictArpRevert } from "@whohas/core";
import type { AuditEntry } from "../store/audit.js";
import type { Incident, IncidentEvent } from "../store/incidents.js";
import type { Hub } from "./hub.js";

/**
 * A StoryEntry is one thing that happened to an incident's subject: the incident's own events (opened, a finding
 * joined, changed or cleared, acknowledged, resolved), the IP moving to another MAC, or an action someone took.
 */
export type StoryEntry =
  | { readonly t: number; readonly kind: "incident"; readonly event: IncidentEvent["kind"]; readonly detail: string }
  | {
      readonly t: number;
      readonly kind: "handover";
      readonly from: Handover["from"];
      readonly to: Handover["to"];
      readonly gapMs: number;
      readonly announced: boolean | null;
    }
  | {
      readonly t: number;
      readonly kind: "action";
      readonly action: string;
      readonly by: string;
      readonly outcome: AuditEntry["outcome"];
      readonly detail: string;
    };

/** STORY_ACTIONS bounds the audited actions one story reads. */
export const STORY_ACTIONS = 500;

/**
 * concerns tells whether an audited action is about incident `i`: an action on its IP, or on several IPs among which
 * the audit names its IP (a group re-announcement, the fix's verification probe: the entry names the first
 * AUDITED_IPS), a download of its frames or of its IP's, or a strictARP fix or rollback (those change what every node
 * answers, so every IP's story holds them).
 */
function concerns(e: AuditEntry, i: Pick<Incident, "id" | "ip">): boolean {
  if (e.action.startsWith("remediation.")) return e.action !== "remediation.preview";
  const input = (typeof e.input === "object" && e.input !== null ? e.input : {}) as { ip?: unknown; ips?: unknown; incident?: unknown };
  if (Array.isArray(input.ips) && input.ips.includes(i.ip)) return true;
  return input.ip === i.ip || (e.action === "capture.download" && input.incident === i.id);
}

/**
 * incidentStory merges, oldest first, the incident's events, the IP's handovers and the actions audited about it
 * between its first evidence and its resolution (or `now`). Events and actions at the same time keep that order: what
 * whohas saw, then what people did.
 */
export function incidentStory(
  i: Incident & { readonly events: readonly IncidentEvent[] },
  handovers: readonly Handover[],
  audit: readonly AuditEntry[],
  now: number,
): StoryEntry[] {
  const until = i.resolvedAt ?? now;
  const within = (t: number) => t >= i.firstSeen && t <= until;
  const entries: StoryEntry[] = [
    ...i.events.map((e): StoryEntry => ({ t: e.t, kind: "incident", event: e.kind, detail: e.detail })),
    ...handovers
      .filter((h) => within(h.at))
      .map((h): StoryEntry => ({ t: h.at, kind: "handover", from: h.from, to: h.to, gapMs: h.gapMs, announced: h.announced })),
    ...audit
      .filter((e) => within(e.t) && concerns(e, i))
      .map((e): StoryEntry => ({ t: e.t, kind: "action", action: e.action, by: e.actor, outcome: e.outcome, detail: e.detail })),
  ];
  const rank = { incident: 0, handover: 1, action: 2 } as const;
  return entries.sort((a, b) => a.t - b.t || rank[a.kind] - rank[b.kind]);
}

/**
 * storyOf is incident `id`'s story with what whohas knows of its subject now, the facts its advice may name: the IP's
 * Services, expected owner and responders (with their vendors), strictARP as configured and as nodes apply it, and for
 * a strictARP revert who wrote it and where the installer keeps it. Null for an unknown incident.
 */
export async function storyOf(hub: Hub, id: number) {
  const i = await hub.judging.incident(id);
  if (i === null) return null;
  const now = hub.clock();
  const node = subjectNode(i.ip);
  const view = subjectIsIp(i.ip) ? hub.ip(i.ip) : null;
  // A revert's incident recorded who wrote strictARP false, when, and the installer's persistence step.
  const revert = subjectCluster(i.ip) === null ? null : ((i.evidence as { revert?: StrictArpRevert | null } | null)?.revert ?? null);
  const { kubernetes, strictArp } = hub.summary();
  const audit = await hub.store.audit.actionsBetween(i.firstSeen, i.resolvedAt ?? now, STORY_ACTIONS);
  return {
    entries: incidentStory(i, view?.handovers ?? [], audit, now),
    node,
    ip:
      view === null
        ? null
        : {
            ip: view.ip,
            address: view.address,
            family: view.family,
            services: view.services.map((s) => ({ namespace: s.namespace, name: s.name, externalTrafficPolicy: s.externalTrafficPolicy })),
            endpointNodes: view.endpointNodes,
            expectedOwner: view.expectedOwner?.node ?? null,
            responders: view.responders.map((r) => ({ mac: r.mac, node: r.node, vendor: r.vendor, answering: r.answering })),
          },
    kubernetes,
    revert,
    strictArp: { configured: strictArp.configured, looseIpvsNodes: strictArp.looseIpvsNodes, drift: strictArp.drift },
  };
}

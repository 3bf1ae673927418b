import type { IpRow } from "~/server/hub/hub";

/**
 * What the IPs page shows for a URL (search, filters, sort): plain functions shared by the table in the browser and
 * the page on the server, which renders the first screen of rows into the HTML.
 */
export type Ip = IpRow;

/**
 * FIRST_SCREEN: rows the server puts in the page's HTML, more than a tall window shows before any script runs. (Here,
 * not in the table's "use client" module: a server component importing a value from there gets a reference.)
 */
export const FIRST_SCREEN = 24;

export const STATE_TEXT: Record<Ip["state"], string> = {
  "multi-responder": "several responders",
  "no-responder": "no responder",
  single: "one responder",
  idle: "idle",
  "not-layer2": "not layer 2 (BGP)",
};
const STATE_RANK: Record<Ip["state"], number> = { "multi-responder": 0, "no-responder": 1, single: 2, idle: 3, "not-layer2": 4 };

/** How each source of the expected owner is shown (the hub's OwnerSource). */
const OWNER_SOURCES: Readonly<Record<string, string>> = {
  servicel2status: "MetalLB ServiceL2Status",
  event: "MetalLB nodeAssigned event",
  computed: "computed: MetalLB election",
  "kube-vip-lease": "kube-vip lease",
  "kube-vip-annotation": "kube-vip vipHost annotation",
  "cilium-lease": "Cilium lease",
};

/** ownerSourceName names where an expected owner came from. */
export const ownerSourceName = (source: string | undefined): string => (source === undefined ? "" : (OWNER_SOURCES[source] ?? source));

/** How each announcer is shown. */
export const ANNOUNCER_NAMES: Readonly<Record<string, string>> = {
  "metallb-l2": "MetalLB layer 2",
  "metallb-bgp": "MetalLB BGP",
  "kube-vip": "kube-vip",
  cilium: "Cilium L2 announcements",
};

export type SortKey = "ip" | "state" | "service" | "owner" | "responders" | "requests";
export const SORTS: Record<SortKey, (a: Ip, b: Ip) => number> = {
  ip: () => 0, // the hub sends IPs in numeric order already
  state: (a, b) => STATE_RANK[a.state] - STATE_RANK[b.state],
  service: (a, b) => (a.services[0]?.name ?? "~").localeCompare(b.services[0]?.name ?? "~"),
  owner: (a, b) => (a.expectedOwner?.node ?? "~").localeCompare(b.expectedOwner?.node ?? "~"),
  responders: (a, b) => b.responders.filter((r) => r.answering).length - a.responders.filter((r) => r.answering).length,
  requests: (a, b) => b.requests - a.requests,
};

/** IpsQuery is the table's state as the URL holds it. */
export interface IpsQuery {
  readonly q: string;
  readonly state: string;
  readonly finding: string;
  readonly sort: SortKey;
  readonly desc: boolean;
}

/** ipsQuery reads the table's state from URL parameters (unknown values fall back to the defaults). */
export function ipsQuery(get: (key: string) => string | null | undefined): IpsQuery {
  const sortParam = get("sort") ?? "ip";
  return {
    q: get("q") ?? "",
    state: get("state") ?? "",
    finding: get("finding") ?? "",
    sort: Object.hasOwn(SORTS, sortParam) ? (sortParam as SortKey) : "ip",
    desc: get("dir") === "desc",
  };
}

function matches(ip: Ip, q: string): boolean {
  if (q === "") return true;
  const hay = [
    ip.ip,
    ...ip.services.map((s) => `${s.namespace}/${s.name}`),
    ip.expectedOwner?.node ?? "",
    ...ip.responders.flatMap((r) => [r.mac, r.node ?? ""]),
    ...ip.findings.map((f) => f.type),
  ];
  return hay.some((h) => h.toLowerCase().includes(q));
}

/** viewRows filters and sorts the IPs (in the hub's numeric order) as the URL asks. */
export function viewRows(all: readonly Ip[], v: IpsQuery): Ip[] {
  const q = v.q.toLowerCase();
  const list = all.filter(
    (i) => (v.state === "" || i.state === v.state) && (v.finding === "" || i.findings.some((f) => f.type === v.finding)) && matches(i, q),
  );
  const sorted = list.sort(SORTS[v.sort]);
  return v.desc ? sorted.reverse() : sorted;
}

import {
  askerJson,
  compareIP,
  handoverJson,
  splitIpKey,
  subjectIsIp,
  silentDropNodes,
  type IpInventory,
  type IpView,
  type OpenFinding,
} from "@whohas/core";
import { vendorOf } from "../vendors.js";
import type { ClusterState } from "./cluster.js";
import type { Judging } from "./judging.js";
import type { Traffic } from "./traffic.js";

/** HubIpState is the judge's state, or "not-layer2": announced by BGP only, its ARP not judged. */
export type HubIpState = IpView["state"] | "not-layer2";

/** A HubIpView is an IP as the dashboard shows it: the judge's view joined with what the cluster says. */
export interface HubIpView extends Omit<IpView, "state" | "responders"> {
  /** The IP key the judge knows it by (the address, with "@VLAN" when seen tagged): what links and actions name. */
  readonly ip: string;
  /** The address alone, its VLAN (null: untagged) and family. */
  readonly address: string;
  readonly vlan: number | null;
  readonly family: 4 | 6;
  readonly state: HubIpState;
  /**
   * Who answered or announced, with the organisation its MAC's prefix is registered to; `node` null: no agent
   * reports the MAC, not a node of the cluster (a router, a VM, a forgotten keepalived).
   */
  readonly responders: readonly (IpView["responders"][number] & { readonly vendor: string | null })[];
  readonly services: IpInventory["services"];
  /** What announces it (MetalLB layer 2 or BGP, kube-vip, Cilium); null when none is recognised. */
  readonly announcer: IpInventory["announcer"];
  readonly expectedOwner: IpInventory["expectedOwner"];
  /** Why the owner is unknown, or why the IP is not judged for ARP. */
  readonly ownerUnknown: string | null;
  /** Where the owner may answer; null: any interface. */
  readonly interfaces: IpInventory["interfaces"];
  /** MetalLB's IPAddressPool holding the IP, when known. */
  readonly pool: string | null;
  /** Nodes hosting a serving endpoint (ETP Local: a responder elsewhere silently drops traffic). */
  readonly endpointNodes: readonly string[];
  /** Answering nodes with no local endpoint of an externalTrafficPolicy Local Service (core's silentDropNodes). */
  readonly silentDropNodes: readonly string[];
  /** Open findings (incidents) on this IP. */
  readonly findings: readonly (OpenFinding & { readonly incidentId: number })[];
}

/**
 * An IpRow is the part of an IP the lists show (the IPs page, the Overview): about a third of a HubIpView, so that
 * thousands of IPs travel and parse quickly. The IP detail uses the whole view.
 */
export interface IpRow {
  /** The IP key (links and actions name it); `address` and `vlan` are what to show. */
  readonly ip: string;
  readonly address: string;
  readonly vlan: number | null;
  readonly family: 4 | 6;
  readonly state: HubIpState;
  readonly services: readonly { readonly namespace: string; readonly name: string; readonly externalTrafficPolicy: "Cluster" | "Local" }[];
  readonly announcer: IpInventory["announcer"];
  readonly expectedOwner: IpInventory["expectedOwner"];
  readonly responders: readonly {
    readonly mac: string;
    readonly node: string | null;
    readonly vendor: string | null;
    readonly answering: boolean;
    readonly lastGratuitous: number | null;
  }[];
  readonly fastest: string | null;
  readonly findings: readonly { readonly type: OpenFinding["type"]; readonly detail: string; readonly firstSeen: number }[];
  readonly requests: number;
  readonly lastRequest: number | null;
  readonly silentDropNodes: readonly string[];
  readonly lastHandover: number | null;
  /**
   * First-answer changes per hour, summed over the IP's askers (each over the last hour, or since first seen), and
   * how many askers saw one in that window: the Overview ranks the IPs by it (each change drops an asker's connections).
   */
  readonly changesPerHour: number;
  readonly askersChanged: number;
}

/** rowOf projects a view to its list row. */
export function rowOf(v: HubIpView): IpRow {
  return {
    ip: v.ip,
    address: v.address,
    vlan: v.vlan,
    family: v.family,
    state: v.state,
    services: v.services.map((x) => ({ namespace: x.namespace, name: x.name, externalTrafficPolicy: x.externalTrafficPolicy })),
    announcer: v.announcer,
    expectedOwner: v.expectedOwner,
    responders: v.responders.map((r) => ({
      mac: r.mac,
      node: r.node,
      vendor: r.vendor,
      answering: r.answering,
      lastGratuitous: r.lastGratuitous,
    })),
    fastest: v.fastest,
    findings: v.findings.map((f) => ({ type: f.type, detail: f.detail, firstSeen: f.firstSeen })),
    requests: v.requests,
    lastRequest: v.lastRequest,
    silentDropNodes: v.silentDropNodes,
    lastHandover: v.handovers[0]?.at ?? null,
    changesPerHour: Math.round(v.askers.reduce((n, a) => n + a.changesPerHour, 0) * 10) / 10,
    askersChanged: v.askers.filter((a) => a.changesPerHour > 0).length,
  };
}

/** responderJson is one responder as the read API, the webhooks and an incident's evidence show it. */
function responderJson(r: HubIpView["responders"][number]) {
  return {
    mac: r.mac,
    node: r.node,
    vendor: r.vendor,
    answering: r.answering,
    replies: r.replies,
    gratuitous: r.gratuitous,
    lastSeen: r.lastSeen,
    lastGratuitous: r.lastGratuitous,
    meanLatencyMs: r.meanLatencyMs,
    lastAnnouncement: r.lastAnnouncement,
  };
}

/**
 * ipJson is one IP as the read API and the webhooks document it; times are milliseconds since the epoch. `ip` is the
 * address; `key` names it in the API's paths (the address, with "@VLAN" when seen inside an 802.1Q tag).
 */
export function ipJson(v: HubIpView) {
  return {
    ip: v.address,
    vlan: v.vlan,
    family: v.family,
    key: v.ip,
    state: v.state,
    services: v.services.map((s) => ({
      namespace: s.namespace,
      name: s.name,
      externalTrafficPolicy: s.externalTrafficPolicy,
      ports: s.ports,
    })),
    pool: v.pool,
    announcer: v.announcer,
    expectedOwner: v.expectedOwner === null ? null : { node: v.expectedOwner.node, source: v.expectedOwner.source },
    ownerUnknown: v.ownerUnknown,
    interfaces: v.interfaces,
    responders: v.responders.map(responderJson),
    fastest: v.fastest,
    findings: v.findings.map((f) => ({
      type: f.type,
      detail: f.detail,
      macs: f.macs,
      firstSeen: f.firstSeen,
      lastSeen: f.lastSeen,
      incidentId: f.incidentId,
    })),
    requests: v.requests,
    lastRequest: v.lastRequest,
    silentDropNodes: v.silentDropNodes,
    handovers: v.handovers.map(handoverJson),
    askers: v.askers.map(askerJson),
    firstAnswerChanges: v.firstAnswerChanges,
  };
}

/**
 * incidentJson is an incident as the read API documents it: for an IP's incident `ip` is the address, `vlan` its
 * VLAN (null: untagged) and `family` 4 or 6; a node's or kube-proxy's ConfigMap's incident keeps its subject
 * (node/NAME, cluster/kube-proxy) in `ip`, with `vlan` and `family` null. `key` is what the API's paths name.
 */
export function incidentJson<T extends { readonly ip: string }>(i: T): T & { vlan: number | null; family: 4 | 6 | null; key: string } {
  if (!subjectIsIp(i.ip)) return { ...i, vlan: null, family: null, key: i.ip };
  const parts = splitIpKey(i.ip);
  return { ...i, ip: parts.ip, vlan: parts.vlan, family: parts.family, key: i.ip };
}

/** evidenceOf is what an incident records of its IP when it opens. */
export function evidenceOf(v: HubIpView | null): unknown {
  return {
    services: v?.services ?? [],
    announcer: v?.announcer ?? null,
    expectedOwner: v?.expectedOwner ?? null,
    responders: (v?.responders ?? []).map(responderJson),
    capturedBy: v?.capturedBy ?? [],
    handovers: (v?.handovers ?? []).slice(0, 5).map(handoverJson),
  };
}

/**
 * Views is the one projection of an IP: the judge's view with the cluster's inventory and the open incidents. The
 * dashboard's API, the read API, the webhooks and the incidents' evidence all read it here.
 */
export class Views {
  constructor(
    readonly traffic: Traffic,
    readonly cluster: ClusterState,
    readonly judging: () => Judging,
    readonly clock: () => number,
  ) {}

  /** ip is one IP's view; null when the hub saw no traffic for it and no Service has it. */
  ip(ip: string, inventory = this.cluster.inventory()): HubIpView | null {
    const now = this.clock();
    const parts = splitIpKey(ip);
    // A Service's address holds on whichever VLAN it is seen: the cluster does not say which.
    const i = inventory.get(parts.ip);
    // A Service's address nobody asked for yet is shown untagged; in a VLAN only once traffic was seen there.
    const v = this.traffic.judge.view(ip, now, this.traffic.lens) ?? (i === undefined || parts.vlan !== null ? null : emptyView(ip));
    if (v === null) return null;
    const local = i?.services.some((s) => s.externalTrafficPolicy === "Local") === true ? { endpointNodes: i.endpointNodes } : null;
    return {
      ...v,
      responders: v.responders.map((r) => ({ ...r, vendor: vendorOf(r.mac) })),
      address: parts.ip,
      vlan: parts.vlan,
      family: parts.family,
      state: i?.announcer === "metallb-bgp" ? "not-layer2" : v.state,
      services: i?.services ?? [],
      announcer: i?.announcer ?? null,
      expectedOwner: i?.expectedOwner ?? null,
      ownerUnknown: i?.ownerUnknown ?? null,
      interfaces: i?.interfaces ?? null,
      pool: i?.pool ?? null,
      endpointNodes: i?.endpointNodes ?? [],
      silentDropNodes: silentDropNodes(v.responders, local),
      findings: this.judging().open(ip),
    };
  }

  /**
   * ipKeys lists every IP seen, and the cluster's LoadBalancer IPs nobody asked for yet, in address order (in no
   * order, when `sorted` is false: sorting tens of thousands of addresses is not free).
   */
  ipKeys(sorted = true): string[] {
    const inventory = this.cluster.inventory();
    const seen = [...this.traffic.ips()];
    // A Service's address seen only inside a VLAN is listed there, not again as an untagged row nobody asked for.
    const addresses = new Set(seen.map((k) => splitIpKey(k).ip));
    const all = [...new Set([...seen, ...[...inventory.keys()].filter((ip) => !addresses.has(ip))])];
    return sorted ? all.sort(compareIP) : all;
  }

  /** ips is the view of every IP ipKeys lists. */
  ips(): HubIpView[] {
    const inventory = this.cluster.inventory();
    return this.ipKeys()
      .map((ip) => this.ip(ip, inventory))
      .filter((v): v is HubIpView => v !== null);
  }

  /** rows lists the given IPs' rows (those still known). */
  rows(ips: Iterable<string>): IpRow[] {
    const inventory = this.cluster.inventory();
    const out: IpRow[] = [];
    for (const ip of ips) {
      const v = this.ip(ip, inventory);
      if (v !== null) out.push(rowOf(v));
    }
    return out;
  }
}

function emptyView(ip: string): IpView {
  return {
    ip,
    state: "idle",
    requests: 0,
    lastRequest: null,
    unansweredSince: null,
    responders: [],
    capturedBy: [],
    fastest: null,
    folded: null,
    handovers: [],
    askers: [],
    firstAnswerChanges: 0,
  };
}

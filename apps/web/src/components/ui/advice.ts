/**
 * What to do now about an incident: plain functions from what whohas knows of the subject (the incident's findings
 * that still hold, the IP's Services, owner and responders, strictARP as configured and as nodes apply it) to steps
 * with the commands to run. A step names only what whohas knows; where it does not know, the step says so.
 */

/** Facts are what an incident page knows, as the incidents story procedure returns them. */
export interface Facts {
  /** The findings that hold now, worst first. */
  readonly findings: readonly { readonly type: string; readonly macs: readonly string[]; readonly detail: string }[];
  /** The node, for a node's incident. */
  readonly node: string | null;
  /** For a strictARP revert (kube-proxy's ConfigMap): who wrote it, and where the installer keeps strictARP. */
  readonly revert?: {
    readonly manager: string | null;
    readonly at: number | null;
    readonly installer: string;
    readonly step: { readonly name: string; readonly title: string; readonly why: string; readonly commands: readonly string[] };
  } | null;
  readonly ip: {
    readonly ip: string;
    readonly address: string;
    readonly family: 4 | 6;
    readonly services: readonly { readonly namespace: string; readonly name: string; readonly externalTrafficPolicy: string }[];
    readonly expectedOwner: string | null;
    readonly endpointNodes: readonly string[];
    readonly responders: readonly {
      readonly mac: string;
      readonly node: string | null;
      readonly vendor: string | null;
      readonly answering: boolean;
    }[];
  } | null;
  readonly kubernetes: "connected" | "off";
  readonly strictArp: {
    readonly configured: { readonly mode: string; readonly strictARP: boolean } | null;
    readonly looseIpvsNodes: readonly string[];
    readonly drift: readonly { readonly node: string; readonly reason: string; readonly message: string }[];
  };
}

/** A Step is one thing to do: why, the commands to copy, and a dashboard page that does it. */
export interface Step {
  readonly key: string;
  readonly title: string;
  readonly why: string;
  readonly commands: readonly string[];
  readonly link: { readonly href: string; readonly text: string } | null;
}

const SPEAKERS = "kubectl get pods -A -l component=speaker -o wide";
const METALLB_NS = "# metallb-system is MetalLB's default namespace: use the one the speakers run in";
const AGENTS = "app.kubernetes.io/component=agent";
const CONFIGMAP = "kubectl -n kube-system get configmap kube-proxy -o jsonpath='{.data.config\\.conf}' | grep -E 'mode|strictARP'";
const SYSCTLS = "sysctl net.ipv4.conf.all.arp_ignore net.ipv4.conf.all.arp_announce";

const listed = (xs: readonly string[]) => (xs.length <= 1 ? (xs[0] ?? "") : `${xs.slice(0, -1).join(", ")} and ${xs.at(-1) ?? ""}`);

/** ciscoMac writes a MAC as Cisco IOS's MAC address table shows it (aabb.ccdd.eeff). */
export function ciscoMac(mac: string): string {
  const hex = mac.replaceAll(":", "").toLowerCase();
  return `${hex.slice(0, 4)}.${hex.slice(4, 8)}.${hex.slice(8, 12)}`;
}

type Ip = NonNullable<Facts["ip"]>;
type Finding = Facts["findings"][number];

/** name is how a step calls a MAC: its node, or the MAC with its vendor for a host no agent reports. */
function name(ip: Ip, mac: string): string {
  const r = ip.responders.find((x) => x.mac === mac);
  if (r?.node !== null && r?.node !== undefined) return r.node;
  return `${mac} (${r?.vendor ?? "vendor not registered"})`;
}
const nodesOf = (ip: Ip, macs: readonly string[]) =>
  [...new Set(macs.flatMap((m) => ip.responders.find((r) => r.mac === m)?.node ?? []))].sort();

/** strictArpOff is the step for several nodes answering because kube-proxy's IPVS mode binds the IP on every node. */
function strictArpOff(f: Facts, ip: Ip): Step | null {
  const c = f.strictArp.configured;
  const answering = ip.responders.filter((r) => r.answering && r.node !== null).map((r) => r.node ?? "");
  const loose = f.strictArp.looseIpvsNodes.filter((n) => answering.includes(n));
  if (loose.length === 0 && !(c?.mode === "ipvs" && !c.strictARP)) return null;
  const config =
    c === null
      ? "kube-proxy's ConfigMap could not be read"
      : `kube-proxy runs in ${c.mode} mode with strictARP ${c.strictARP ? "on" : "off"}`;
  return {
    key: "strictarp",
    title: "Turn kube-proxy's strictARP on",
    why:
      `${config}. ` +
      (loose.length === 0
        ? "No node reports answering ARP for any local address yet."
        : `${listed(loose)} answer${loose.length === 1 ? "s" : ""} ARP for any local address, and IPVS binds ${ip.address} to kube-ipvs0 on every node: each answers for it, and clients cache whichever answers first.`),
    commands: [CONFIGMAP, `${SYSCTLS}   # on ${loose.length === 0 ? "each node" : listed(loose)}: strict is 1 and 2`],
    link: { href: "/fix", text: "Preview and apply the strictARP fix" },
  };
}

/** announce is the step that makes the expected owner announce the IP again with MetalLB's frames. */
function announce(ip: Ip, why: string): Step {
  const owner = ip.expectedOwner;
  return {
    key: "announce",
    title: owner === null ? "Find the expected owner, then announce from it" : `Make ${owner} announce ${ip.address} again`,
    why:
      owner === null
        ? `${why} whohas does not know which node should own ${ip.address}: MetalLB's status names it.`
        : `${why} ${owner} is the expected owner: its announcement makes switches and clients learn its MAC.`,
    commands:
      owner === null
        ? ip.services.map(
            (s) => `kubectl get servicel2statuses -A -l metallb.io/service-name=${s.name},metallb.io/service-namespace=${s.namespace}`,
          )
        : [`whohas announce ${ip.ip} --force   # on ${owner} only: from another node it creates a second responder`],
    link: owner === null ? null : { href: `/ips/${encodeURIComponent(ip.ip)}`, text: "or use Force re-announce on the IP's page" },
  };
}

/** ipSteps are the steps for one finding on an IP. */
function ipSteps(f: Facts, ip: Ip, x: Finding): Step[] {
  const a = ip.address;
  const nodes = nodesOf(ip, x.macs);
  switch (x.type) {
    case "multi-responder": {
      const s = strictArpOff(f, ip);
      if (s !== null) return [s];
      return [
        {
          key: "multi",
          title: `Find out why ${listed(x.macs.map((m) => name(ip, m)))} all answer`,
          why:
            f.kubernetes === "off"
              ? "whohas has no Kubernetes access, so it cannot read kube-proxy's mode: check it by hand, and count who answers each request."
              : "No node reports kube-proxy's IPVS mode answering for any local address: count who answers each request, and check kube-proxy's ConfigMap.",
          commands: [`whohas probe ${ip.ip} --duration 60s --interval 1s   # from any node`, CONFIGMAP],
          link: null,
        },
      ];
    }
    case "silent-drop":
    case "wrong-owner": {
      const s = strictArpOff(f, ip);
      const endpoints = ip.services.map(
        (v) => `kubectl -n ${v.namespace} get endpointslices -l kubernetes.io/service-name=${v.name} -o wide`,
      );
      const why =
        x.type === "silent-drop"
          ? `${listed(nodes)} answer${nodes.length === 1 ? "s" : ""} but host${nodes.length === 1 ? "s" : ""} no endpoint of this externalTrafficPolicy Local Service: traffic sent there is dropped.`
          : `${listed(nodes)} answer${nodes.length === 1 ? "s" : ""} for ${a} without owning it.`;
      const check: Step = { key: `${x.type}-check`, title: `Check the Service's endpoints`, why, commands: endpoints, link: null };
      if (s !== null) return [s, ...(x.type === "silent-drop" && endpoints.length > 0 ? [check] : [])];
      return x.type === "wrong-owner" ? [announce(ip, why)] : endpoints.length > 0 ? [check] : [];
    }
    case "split-brain":
      return [
        {
          key: "split-brain",
          title: "Check the MetalLB speakers' memberlist",
          why:
            `${listed(nodes.length > 0 ? nodes : x.macs)} both announce ${a}: each speaker elects an owner from its own view of ` +
            "memberlist, so a partition (or a speaker that cannot reach the others on port 7946) gives two owners." +
            (ip.expectedOwner === null ? "" : ` whohas expects ${ip.expectedOwner}.`),
          commands: [
            SPEAKERS,
            `kubectl -n metallb-system logs -l component=speaker --since=30m --prefix | grep -Ei 'memberlist|${a}'   ${METALLB_NS}`,
          ],
          link: null,
        },
      ];
    case "address-conflict":
    case "ethernet-mismatch": {
      const strangers = x.macs.filter((m) => (ip.responders.find((r) => r.mac === m)?.node ?? null) === null);
      const macs = strangers.length > 0 ? strangers : x.macs;
      return [
        {
          key: x.type,
          title:
            x.type === "address-conflict" ? `Find the host that is not a cluster node` : "Find the device behind the mismatched frames",
          why:
            `${listed(macs.map((m) => name(ip, m)))} ` +
            (x.type === "address-conflict"
              ? `answer${macs.length === 1 ? "s" : ""} for ${a}: no whohas agent reports it, it is not a node. ` +
                `Find its switch port, then give that host another address or take ${a} out of MetalLB's pool.`
              : "sends frames whose Ethernet source is not its ARP sender (Microsoft NLB does so on purpose)."),
          commands: [
            ip.family === 4
              ? `arping -b -c 3 ${a}   # from a host on the segment; -b keeps broadcasting, so every answer shows`
              : `ndisc6 ${a} IFACE`,
            `ip ${ip.family === 6 ? "-6 " : ""}neigh show to ${a}`,
            ...macs.map((m) => `show mac address-table address ${ciscoMac(m)}   # on the switch (Cisco IOS; ${m} elsewhere)`),
          ],
          link: null,
        },
      ];
    }
    case "stale-announcer":
      return [announce(ip, `${listed(nodes)} announced ${a} last and the expected owner has not announced since.`)];
    case "changed":
      return [
        announce(ip, `The answers moved to ${listed(x.macs.map((m) => name(ip, m)))} without a gratuitous announcement.`),
        {
          key: "flush",
          title: "Flush the stale entry on clients",
          why: "Clients and routers that cached the old MAC keep sending there until they ask again.",
          commands: [`ip neigh flush to ${a}   # on each client or router that cached the old MAC`],
          link: null,
        },
      ];
    case "flip-flop":
      return [
        {
          key: "flip-flop",
          title: "Find out why the owner keeps changing",
          why: `${a} moves back and forth between ${listed(x.macs.map((m) => name(ip, m)))}: a speaker restarting, a node flapping Ready, or memberlist losing members.`,
          commands: [
            SPEAKERS,
            "kubectl get nodes",
            ...ip.services.map(
              (s) => `kubectl -n ${s.namespace} get events --field-selector involvedObject.name=${s.name},reason=nodeAssigned`,
            ),
          ],
          link: null,
        },
      ];
    case "no-responder":
      return [
        {
          key: "no-responder",
          title: `Find out why nobody answers for ${a}`,
          why: `Clients ask for ${a} and no MAC answers.${ip.expectedOwner === null ? "" : ` ${ip.expectedOwner} should.`} A speaker that is not running, or a Service with no serving endpoint, makes MetalLB announce nothing.`,
          commands: [
            SPEAKERS,
            ...ip.services.map((s) => `kubectl -n ${s.namespace} get endpointslices -l kubernetes.io/service-name=${s.name} -o wide`),
          ],
          link: null,
        },
      ];
    case "wrong-interface":
      return [
        {
          key: "wrong-interface",
          title: "Check the interfaces the L2Advertisement names",
          why: `${ip.expectedOwner ?? "The owner"} answers from an interface its announcer does not name.`,
          commands: ["kubectl get l2advertisements -A -o yaml | grep -A5 interfaces"],
          link: null,
        },
      ];
    case "capture-lost":
      return [agents(null, "Every agent that captured this IP is down: whohas cannot see who answers.")];
    default:
      return [];
  }
}

/** agents is the step that looks at the whohas agents (on one node, or all). */
function agents(node: string | null, why: string): Step {
  const on = node === null ? "" : ` --field-selector spec.nodeName=${node}`;
  return {
    key: "agents",
    title: node === null ? "Check the whohas agents" : `Check the whohas agent on ${node}`,
    why,
    commands: [
      `kubectl -n whohas get pods -l ${AGENTS} -o wide${on}   # whohas is the namespace of the shipped manifests`,
      `kubectl -n whohas logs --tail=100 $(kubectl -n whohas get pods -l ${AGENTS}${on} -o name | head -1)`,
      ...(node === null ? [] : [`kubectl get node ${node}`]),
    ],
    link: null,
  };
}

/** nodeSteps are the steps for one finding on a node. */
function nodeSteps(f: Facts, node: string, x: Finding): Step[] {
  if (x.type === "agent-down") return [agents(node, x.detail)];
  if (x.type !== "strictarp-drift") return [];
  const d = f.strictArp.drift.find((y) => y.node === node);
  return [
    {
      key: "drift",
      title: `Make ${node}'s kernel do what kube-proxy's ConfigMap says`,
      why:
        d === undefined
          ? x.detail
          : d.reason === "never-reset"
            ? `${d.message} kube-proxy never sets arp_ignore back when strictARP is turned off: the node keeps it until it reboots.`
            : `${d.message} kube-proxy reads its ConfigMap only when it starts: the Fix page restarts it.`,
      commands: [`${SYSCTLS}   # on ${node}`, CONFIGMAP],
      link: { href: "/fix", text: "Open the strictARP fix" },
    },
  ];
}

/**
 * clusterSteps are the steps for a finding on kube-proxy's ConfigMap: strictARP reverted is made to stay fixed where
 * the installer keeps it first (fixing the ConfigMap alone is undone at its next run), then fixed again.
 */
function clusterSteps(f: Facts, x: Finding): Step[] {
  if (x.type !== "strictarp-reverted") return [];
  const r = f.revert ?? null;
  const who = r?.manager == null ? "An unknown writer" : `Field manager ${r.manager}`;
  const when = r?.at == null ? "" : ` at ${new Date(r.at).toISOString()}`;
  return [
    {
      key: "persist",
      title: r === null ? "Set strictARP where your installer keeps kube-proxy's configuration" : r.step.title,
      why: r === null ? x.detail : `${who} turned strictARP off${when}. ${r.step.why}`,
      commands: r?.step.commands ?? [],
      link: null,
    },
    {
      key: "refix",
      title: "Then turn strictARP on again and restart kube-proxy",
      why: "kube-proxy keeps arp_ignore as it was set until it restarts; a node that restarts now answers ARP for every VIP again.",
      commands: [CONFIGMAP, `${SYSCTLS}   # on each node: strict is 1 and 2`],
      link: { href: "/fix", text: "Preview and apply the strictARP fix" },
    },
  ];
}

/** advise turns what whohas knows into steps, the worst finding's first, each step once. */
export function advise(f: Facts): Step[] {
  const steps = new Map<string, Step>();
  for (const x of f.findings) {
    const got = f.node !== null ? nodeSteps(f, f.node, x) : f.ip === null ? clusterSteps(f, x) : ipSteps(f, f.ip, x);
    for (const s of got) if (!steps.has(s.key)) steps.set(s.key, s);
  }
  return [...steps.values()];
}

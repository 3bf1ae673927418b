import type { Lab } from "./lab.js";
import type { AgentTokens } from "./kube/agent-tokens.js";
import type { ForbiddenRule, PendingWrite, TestApiServer } from "./kube/server.js";
import type { KubeProxies } from "./kube-proxy.js";

export interface StackOptions {
  readonly nodes?: number;
  readonly vips?: number;
  /** TCP port of the hub; 0 picks a free one. */
  readonly port?: number;
  /** How often the client asks for each VIP. */
  readonly requestIntervalMs?: number;
  /** Where process logs go (default: $TMPDIR/whohas-lab-ID, kept after teardown for post-mortems). */
  readonly logDir?: string;
  /**
   * Also run the test Kubernetes API server with this lab's cluster (nodes, a LoadBalancer Service per VIP, kube-proxy
   * in IPVS mode with strictARP false, MetalLB's L2Advertisement), and point the hub at it.
   */
  readonly kube?: boolean;
  /** How long the dashboard's Probe runs (actions.probeDuration; the product's default is 60 s). */
  readonly probeDuration?: string;
  /**
   * The hub's background probe of every LoadBalancer IP (backgroundProbe.interval): "off" unless given, so that a test
   * counts only the frames it makes; the demo runs the product's 30 s.
   */
  readonly backgroundProbe?: string;
  /** More keys for the hub's config file (alerting, webhooks, ...), merged over the lab's. */
  readonly hubConfig?: Readonly<Record<string, unknown>>;
  /**
   * Complete the cluster (needs `kube`): a MetalLB speaker in each node namespace answering for the IPs the election
   * gives its node, and a kube-proxy stand-in per node applying strictARP's sysctls on each DaemonSet restart. Then
   * strictARP true leaves exactly one responder per IP: the elected node's speaker.
   */
  readonly cluster?: boolean;
  /**
   * Agents authenticate with a projected ServiceAccount token (audience whohas) that the hub checks by TokenReview
   * against the test API server (needs `kube`), instead of the shared token.
   */
  readonly serviceAccountAgents?: boolean;
  /**
   * The hub runs in its own namespace on the lab link (lab.hub) and the agents reach it over TCP at its address, as
   * they reach a hub Service in a cluster; the hub sees each agent's node address. Its dashboard, metrics and the
   * test API server are carried between that namespace and this one as `kubectl port-forward` would (Unix sockets
   * joined by forwards), so `url` and `metricsUrl` work as usual. Webhook receivers in this namespace are out of reach.
   */
  readonly hubOnLink?: boolean;
  /**
   * The cluster this lab is in a fleet (cluster.name on the hub, --cluster on every agent): several labs' hubs on one
   * PostgreSQL (hubConfig.storage.url) make a fleet, each lab one cluster. Absent: the default cluster.
   */
  readonly clusterName?: string;
  /** Requests the test API server refuses with 403 (RBAC the hub lacks). */
  readonly forbidden?: readonly ForbiddenRule[];
  /** Holds each write to the test API server until it settles (see TestApiServerOptions.beforeWrite). */
  readonly beforeWrite?: (write: PendingWrite) => Promise<void> | void;
  /**
   * Changes the seeded cluster before the hub starts (needs `kube`): another announcer's Leases, a BGP pool, a
   * Service's loadBalancerClass: the hub's first verdicts then already follow them.
   */
  readonly kubeSetup?: (api: TestApiServer) => void;
  /**
   * Dual stack (LabOptions.ipv6): IPv6 VIPs beside the IPv4 ones, asked for by Neighbor Solicitation, seeded as
   * LoadBalancer Services with `kube` and answered by their elected owner's speaker with `cluster`.
   */
  readonly ipv6?: boolean;
  /**
   * Addresses on VLANs, each written IP@VLAN ("198.18.0.230@30", "2001:2::230@40" with ipv6): the client also asks for
   * them in 802.1Q-tagged frames. Nobody owns them at first (no Kubernetes Service is seeded for them): `own` decides
   * per VLAN which speakers answer, so one address can have one owner on VLAN 30 and two on VLAN 40.
   */
  readonly vlanVips?: readonly string[];
  /**
   * LoadBalancer IPs of Services of their own (demo/spare-N, needs `kube`), in MetalLB's pool like the others, that no
   * node holds, no speaker takes (they are not in `owners`) and the client does not ask for: a host that is no node
   * can take one (Lab.addStranger) without changing who answers for the lab's VIPs. Only whohas's probes ask for it.
   */
  readonly spareVips?: readonly string[];
  /**
   * Hub replicas on one PostgreSQL (hubConfig must give storage.url): each with its own port, metrics port and
   * agents' socket, ha.enabled, named hub-1, hub-2, ...; every agent is given each replica's address. hub-1 starts
   * first and leads; the others stand by.
   */
  readonly replicas?: number;
}

/** A Replica is one hub process of a Stack started with replicas (hub-1 is the Stack's own hub). */
export interface Replica {
  readonly name: string;
  readonly url: string;
  readonly metricsUrl: string;
  /** kill ends it with SIGKILL (a node lost, an OOM kill); start starts it again, on the same addresses. */
  kill(): Promise<void>;
  start(): Promise<void>;
}

/** A LabUser signs in to the lab's dashboard (names and random passwords made for each run). */
export interface LabUser {
  readonly name: string;
  readonly password: string;
  readonly role: "viewer" | "operator" | "admin";
}

/** A Stack is a running lab with its hub, one agent per node and the requesting client. */
export interface Stack {
  readonly lab: Lab;
  readonly url: string;
  readonly port: number;
  /** The hub's /metrics (a port of its own, as metrics.listen gives it). */
  readonly metricsUrl: string;
  readonly token: string;
  /** Bearer token of the hub's read API (/api/v1). */
  readonly viewerToken: string;
  /** One user of each role, for the dashboard's sign-in. */
  readonly users: { readonly viewer: LabUser; readonly operator: LabUser; readonly admin: LabUser };
  /** The hub's config file and SQLite database. */
  readonly hubConfig: string;
  readonly dbPath: string;
  readonly logDir: string;
  /** The test API server, when `kube` was asked for. */
  readonly api: TestApiServer | null;
  /** The ServiceAccount tokens the test API server knows, with serviceAccountAgents. */
  readonly saTokens: AgentTokens | null;
  /** The kube-proxy stand-ins and each VIP's elected owner, when `cluster` was asked for. */
  readonly kubeProxies: KubeProxies | null;
  /**
   * own tells `node`'s MetalLB-like speaker which IPs it owns now (with `cluster`): it answers for them, and sends
   * MetalLB's gratuitous burst for each it takes over, unless `quiet` (a speaker that fails to announce). An entry
   * written IP@VLAN is owned on that VLAN only (tagged requests, tagged answers); a plain IP untagged only.
   */
  own(node: string, ips: readonly string[], opts?: { readonly quiet?: boolean }): void;
  /** Each Service VIP's elected owner (IPv4 and, with ipv6, IPv6), with `cluster`. */
  readonly owners: ReadonlyMap<string, string>;
  /** The IP@VLAN addresses the client asks for in tagged frames (StackOptions.vlanVips). */
  readonly vlanVips: readonly string[];
  /** restartHub stops the hub and starts a fresh one on the same port and socket (agents must reconnect). */
  restartHub(): Promise<void>;
  /** stopHub and startHub split a restart, for outages of a chosen length. */
  stopHub(): Promise<void>;
  /** killHub kills the hub with SIGKILL: nothing is flushed, as in a crash or an OOM kill. */
  killHub(): Promise<void>;
  startHub(): Promise<void>;
  /** The hub's replicas, hub-1 first (one unless StackOptions.replicas). */
  readonly replicas: readonly Replica[];
  /** stopAgent kills one node's agent (SIGKILL: the hub learns only from the silence); startAgent starts it again. */
  stopAgent(node: string): Promise<void>;
  startAgent(node: string): void;
  /** freezeAgent stops one node's agent where it is (SIGSTOP: its connection open and silent); thawAgent lets it go on. */
  freezeAgent(node: string): void;
  thawAgent(node: string): void;
  /** pauseRequests stops the client's ARP requests (nothing new on the wire); resumeRequests starts them again. */
  pauseRequests(): void;
  resumeRequests(): void;
  stop(): Promise<void>;
}

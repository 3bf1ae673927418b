import { parseArgs } from "node:util";
import { normalizeIpKey } from "@whohas/core/analyze";
import type { PluginEnv } from "./env.js";

export const PLUGIN_HELP = `Usage: kubectl whohas <command> [options]

Asks the whohas hub who answers ARP / NDP for your LoadBalancer IPs, from the terminal.

Commands:
  ips                 every IP the hub knows: state, Service, expected owner, who answers now, findings
  ip IP[@VLAN]        one IP in full: responders, owner, findings, handovers, who asks
  incidents           incidents, newest first (open and resolved)

Options:
  -o, --output FMT    table (default) or json (the read API's objects, unchanged)
  --state STATE       ips: single, multi-responder (or several-responders), no-responder, idle, not-layer2
                      incidents: open or resolved
  --ip IP[@VLAN]      incidents: only this IP's
  --limit N           incidents: at most N (default 50)

Reaching the hub (the read API, GET only):
  By default through your current kubeconfig: 'kubectl port-forward' to the hub's Service, for the length of the
  command. The read-API token comes from --token-file or WHOHAS_TOKEN, else from the Secret whohas-read-token
  (key: token) in the hub's namespace. Make a token in the dashboard (Settings > Read-API tokens), then store it
  once for your team (paste it, then Ctrl-D: it stays out of your shell history):
    kubectl -n whohas create secret generic whohas-read-token --from-file=token=/dev/stdin
  -n, --namespace NS  the hub's namespace (default whohas)
  --service NAME      the hub's Service (default whohas-hub), port --port (default 3000)
  --context NAME      the kubeconfig context to use; --kubeconfig FILE: that kubeconfig
  --url URL           talk to the hub at URL instead (WHOHAS_URL), e.g. through an Ingress: no port-forward and
                      no Secret (give the token); a private CA: NODE_EXTRA_CA_CERTS=ca.pem
  --token-file FILE   read the read-API token from FILE (one line)
  --token TOKEN       the token itself: every user of this machine sees it in 'ps'; prefer --token-file

Exit status: 0 nothing wrong among what is shown; 1 an IP shown has several responders (multi-responder or
split-brain; for incidents, an open incident with one of them open); 2 no answer: a wrong command line, the hub
unreachable or refusing, an unknown IP (the message says which). For scripts and CI gates:
  kubectl whohas ips >/dev/null; [ $? -ne 1 ] || echo "several nodes answer for a LoadBalancer IP"
`;

/** IP_STATES are the states the read API gives an IP; `several-responders` is the dashboard's word for one. */
const IP_STATES = ["single", "multi-responder", "no-responder", "idle", "not-layer2"] as const;
export type IpState = (typeof IP_STATES)[number];

/** How to reach the hub: a URL, or a port-forward to its Service through kubectl. */
export interface Connection {
  readonly url: string | null;
  readonly token: string | null;
  readonly tokenFile: string | null;
  readonly namespace: string;
  readonly service: string;
  readonly port: number;
  readonly context: string | null;
  readonly kubeconfig: string | null;
  /** The kubectl to run for the port-forward and the token's Secret. */
  readonly kubectl: string;
}

export type PluginCommand =
  | { readonly kind: "help" }
  | { readonly kind: "ips"; readonly state: IpState | null }
  | { readonly kind: "ip"; readonly key: string }
  | { readonly kind: "incidents"; readonly state: "open" | "resolved" | null; readonly ip: string | null; readonly limit: number };

export interface PluginArgs {
  readonly command: PluginCommand;
  readonly output: "table" | "json";
  readonly connection: Connection;
}

/** UsageError: the command line is wrong (exit 2, with the help's pointer). */
export class UsageError extends Error {}

/** parsePluginArgs reads the plugin's command line; `env` gives WHOHAS_URL, WHOHAS_TOKEN and KUBECTL. */
export function parsePluginArgs(argv: readonly string[], env: PluginEnv): PluginArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        output: { type: "string", short: "o" },
        state: { type: "string" },
        ip: { type: "string" },
        limit: { type: "string" },
        namespace: { type: "string", short: "n" },
        service: { type: "string" },
        port: { type: "string" },
        context: { type: "string" },
        kubeconfig: { type: "string" },
        url: { type: "string" },
        token: { type: "string" },
        "token-file": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const v = parsed.values;
  const [name, ...rest] = parsed.positionals;
  const output = v.output ?? "table";
  if (output !== "table" && output !== "json") throw new UsageError(`-o ${output}: the output is table or json`);
  const port = v.port === undefined ? 3000 : Number(v.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`--port ${v.port}: a TCP port, 1 to 65535`);
  const url = v.url ?? env.WHOHAS_URL ?? null;
  // The URL is not repeated in these messages: it may hold a password.
  if (url !== null && !/^https?:\/\/[^/]/.test(url)) throw new UsageError("--url: an http:// or https:// URL of the hub");
  if (url !== null && /^https?:\/\/[^/]*@/.test(url))
    throw new UsageError("--url: no user or password in the URL (the token goes in --token-file)");
  if (v.token !== undefined && v["token-file"] !== undefined) throw new UsageError("--token and --token-file: give one of them");
  const connection: Connection = {
    url: url?.replace(/\/+$/, "") ?? null,
    // An empty WHOHAS_TOKEN (a CI variable that is not set) is no token.
    token: v.token ?? (v["token-file"] === undefined && env.WHOHAS_TOKEN !== "" ? (env.WHOHAS_TOKEN ?? null) : null),
    tokenFile: v["token-file"] ?? null,
    namespace: v.namespace ?? "whohas",
    service: v.service ?? "whohas-hub",
    port,
    context: v.context ?? null,
    kubeconfig: v.kubeconfig ?? null,
    kubectl: env.KUBECTL ?? "kubectl",
  };
  const none = (what: string, value: unknown) => {
    if (value !== undefined) throw new UsageError(`${what} applies to ${what === "--state" ? "ips and incidents" : "incidents"} only`);
  };
  let command: PluginCommand;
  if (v.help === true || name === undefined || name === "help") command = { kind: "help" };
  else if (name === "ips") {
    none("--ip", v.ip);
    none("--limit", v.limit);
    command = { kind: "ips", state: ipState(v.state) };
  } else if (name === "ip") {
    none("--state", v.state);
    none("--ip", v.ip);
    none("--limit", v.limit);
    const [text] = rest;
    if (text === undefined) throw new UsageError("ip: which IP? kubectl whohas ip 192.0.2.10 (or 192.0.2.10@30 for one seen in VLAN 30)");
    command = { kind: "ip", key: ipKeyArg(text) };
    rest.shift();
  } else if (name === "incidents") {
    const state = v.state ?? null;
    if (state !== null && state !== "open" && state !== "resolved")
      throw new UsageError(`--state ${state}: incidents are open or resolved`);
    const limit = v.limit === undefined ? 50 : Number(v.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError(`--limit ${v.limit}: a whole number from 1 to 1000`);
    command = { kind: "incidents", state, ip: v.ip === undefined ? null : ipKeyArg(v.ip), limit };
  } else throw new UsageError(`unknown command ${JSON.stringify(name)}: ips, ip or incidents`);
  if (command.kind !== "help" && rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  return { command, output, connection };
}

function ipState(s: string | undefined): IpState | null {
  if (s === undefined) return null;
  if (s === "several-responders") return "multi-responder";
  if ((IP_STATES as readonly string[]).includes(s)) return s as IpState;
  throw new UsageError(`--state ${s}: an IP is ${IP_STATES.join(", ")} (several-responders is multi-responder)`);
}

function ipKeyArg(text: string): string {
  const key = normalizeIpKey(text);
  if (key === null)
    throw new UsageError(`${JSON.stringify(text)} is not an IP address (one seen in a VLAN is ADDRESS@VLAN, e.g. 192.0.2.10@30)`);
  return key;
}

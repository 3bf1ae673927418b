import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { z } from "zod";
import { DEFAULT_EXCLUDE } from "./capture/interfaces.js";

/** AgentConfig is everything `whohas agent` runs on, parsed once from flags and environment (STYLE 3). */
export interface AgentConfig {
  readonly hub: string;
  readonly node: string;
  readonly interfaces: RegExp;
  readonly excludeInterfaces: RegExp | null;
  readonly token: string;
  readonly maxBufferedEntries: number;
}

export const AGENT_HELP = `Usage: whohas agent --hub URL --token-file FILE [options]

Captures ARP on this node with libpcap and streams what answers for which IP to the whohas hub.
Needs root, or CAP_NET_RAW and CAP_NET_ADMIN.

Options:
  --hub URL                 hub agent endpoint: ws://HOST:PORT/agent, wss://..., or ws+unix:///PATH.sock:/agent
  --token-file FILE         file holding the agent bearer token (the hub's WHOHAS_AGENT_TOKEN)
  --node NAME               this node's name (default: $NODE_NAME from the downward API, else the hostname)
  --interfaces REGEX        capture only on interfaces matching REGEX (default: all)
  --exclude-interfaces REGEX
                            never capture on these (default: MetalLB's list, ^veth.* ^docker.* ^kube-ipvs.* ...)
                            pass '' to exclude nothing
  --max-buffered-entries N  aggregates kept while the hub is unreachable (default 100000)
  -h, --help                this text
`;

const Schema = z.object({
  hub: z.string().regex(/^(wss?|ws\+unix):\/\//, "--hub must start with ws://, wss:// or ws+unix://"),
  "token-file": z.string().min(1, "--token-file is required"),
  node: z.string().optional(),
  interfaces: z.string().default(".*"),
  "exclude-interfaces": z.string().default(DEFAULT_EXCLUDE),
  "max-buffered-entries": z.coerce.number().int().positive().default(100_000),
});

function regex(flag: string, src: string): RegExp {
  try {
    return new RegExp(src);
  } catch (e) {
    throw new Error(`${flag}: not a regular expression: ${(e as Error).message}`);
  }
}

/** parseAgentConfig turns parsed flags into an AgentConfig or throws an Error whose message names the flag. */
export function parseAgentConfig(flags: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const r = Schema.safeParse(flags);
  if (!r.success) {
    const i = r.error.issues[0];
    const path = i?.path.join(".") ?? "";
    throw new Error(i?.message.startsWith("--") ? i.message : `--${path}: ${i?.message ?? "invalid"}`);
  }
  const f = r.data;
  let token: string;
  try {
    token = readFileSync(f["token-file"], "utf8").trim();
  } catch (e) {
    throw new Error(`--token-file: cannot read ${f["token-file"]}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (token === "") throw new Error(`--token-file: ${f["token-file"]} is empty`);
  const node = f.node ?? env.NODE_NAME ?? hostname();
  return {
    hub: f.hub,
    node,
    interfaces: regex("--interfaces", f.interfaces),
    excludeInterfaces: f["exclude-interfaces"] === "" ? null : regex("--exclude-interfaces", f["exclude-interfaces"]),
    token,
    maxBufferedEntries: f["max-buffered-entries"],
  };
}

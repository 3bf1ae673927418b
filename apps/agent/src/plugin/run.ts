import { SEVERE_FINDINGS } from "@whohas/core/analyze";
import { PLUGIN_HELP, UsageError, parsePluginArgs, type PluginCommand } from "./args.js";
import { ConnectError, connect, type HubSession } from "./connect.js";
import type { PluginEnv } from "./env.js";
import { HubError, getJson } from "./hub-api.js";
import { incidentsTable, ipDetail, ipsTable, several, severeIncident } from "./render.js";
import { ShapeError, asIncidents, asIp, asIps } from "./shape.js";

export interface PluginIo {
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
  readonly env: PluginEnv;
  readonly now: () => number;
}

/** runPlugin runs `kubectl whohas ...`; returns the exit status (0 fine, 1 several responders, 2 could not ask). */
export async function runPlugin(argv: readonly string[], io: PluginIo): Promise<number> {
  let args;
  try {
    args = parsePluginArgs(argv, io.env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(`kubectl whohas: ${e.message}\nRun 'kubectl whohas --help' for the commands and options.\n`);
    return 2;
  }
  if (args.command.kind === "help") {
    io.out(PLUGIN_HELP);
    return 0;
  }
  let session: HubSession | null = null;
  try {
    session = await connect(args.connection);
    for (const w of session.warnings) io.err(`kubectl whohas: warning: ${w}\n`);
    const { text, json, severe } = await ask(session, args.command, io.now);
    io.out(args.output === "json" ? `${JSON.stringify(json, null, 2)}\n` : text);
    return severe ? 1 : 0;
  } catch (e) {
    if (e instanceof ShapeError) {
      io.err(
        `kubectl whohas: the hub's answer is not what the read API returns (${e.message}): is --url the whohas hub, of this release?\n`,
      );
      return 2;
    }
    if (!(e instanceof ConnectError || e instanceof HubError)) throw e;
    io.err(`kubectl whohas: ${e.message}\n`);
    return 2;
  } finally {
    session?.close();
  }
}

async function ask(
  s: HubSession,
  c: Exclude<PluginCommand, { kind: "help" }>,
  now: () => number,
): Promise<{ text: string; json: unknown; severe: boolean }> {
  switch (c.kind) {
    case "ips": {
      const all = asIps(await getJson(s, "/api/v1/ips"));
      const ips = c.state === null ? all : all.filter((ip) => ip.state === c.state);
      return { text: ipsTable(ips, SEVERE_FINDINGS), json: ips, severe: ips.some((ip) => several(ip, SEVERE_FINDINGS)) };
    }
    case "ip": {
      const ip = asIp(await getJson(s, `/api/v1/ips/${encodeURIComponent(c.key)}`));
      return { text: ipDetail(ip, now()), json: ip, severe: several(ip, SEVERE_FINDINGS) };
    }
    case "incidents": {
      const q = new URLSearchParams({ limit: String(c.limit) });
      if (c.state !== null) q.set("state", c.state);
      if (c.ip !== null) q.set("ip", c.ip);
      const list = asIncidents(await getJson(s, `/api/v1/incidents?${q.toString()}`));
      return { text: incidentsTable(list, now()), json: list, severe: list.some((i) => severeIncident(i, SEVERE_FINDINGS)) };
    }
  }
}

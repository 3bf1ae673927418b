import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createServer, type RequestListener, type Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import pg from "pg";
import type { Logger } from "@whohas/core";
import { trustReplicas } from "../client-address.js";
import type { HubConfig } from "../config/load.js";
import { limitConnections } from "../http.js";
import { listen } from "../listen.js";
import { sessionOptions } from "../store/postgres.js";
import type { SettingsRepo } from "../store/settings.js";
import { Leadership, leaderName, leaderSession, sessionName } from "./leadership.js";
import { Standby } from "./standby.js";

/** Settings keys of replicas: who leads and where (written by the leader), and the key standbys vouch with. */
const LEADER_KEY = "ha.leader";
const REPLICA_KEY = "ha.replicaKey";

/**
 * standUntilLeading serves as a standby (alive, not ready) until this replica holds the leader's lock in PostgreSQL;
 * without ha.enabled it leads at once. Returns the leadership and what ends the standby's listeners, called once the
 * leader's own parts are built, just before they listen on the same addresses.
 */
export async function standUntilLeading(
  config: HubConfig,
  logger: Logger,
  agentPaths: readonly string[],
): Promise<{ leadership: Leadership | null; endStandby: () => Promise<void> }> {
  const url = config.storage.url;
  if (!config.ha || url === null) return { leadership: null, endStandby: () => Promise.resolve() };
  const name = config.replicaName;
  const cluster = config.clusterName;
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 5000, ...sessionOptions(cluster) });
  pool.on("error", () => undefined);
  const standby = new Standby({
    name,
    cluster,
    agentPaths,
    certificate: config.tls?.cert,
    lookup: async () => {
      const [session, rows] = await Promise.all([
        leaderSession(pool, cluster),
        pool.query<{ key: string; value: string }>("SELECT key, value FROM settings WHERE key IN ($1, $2)", [LEADER_KEY, REPLICA_KEY]),
      ]);
      const value = (k: string): unknown => {
        const row = rows.rows.find((r) => r.key === k);
        return row === undefined ? null : JSON.parse(row.value);
      };
      const said = value(LEADER_KEY) as { name: string; url: string } | null;
      // The address is the leader's only when the lock's holder wrote it: a row left by an earlier leader is not.
      const current = said !== null && session !== null && sessionName(said.name) === session;
      return {
        leader:
          session === null
            ? null
            : { name: current ? said.name : session, url: current ? said.url : null, self: session === sessionName(name) },
        key: value(REPLICA_KEY) as string | null,
      };
    },
  });
  const web = (l: RequestListener) =>
    config.tls === null ? createServer(l) : createTlsServer({ cert: config.tls.cert, key: config.tls.key }, l);
  // Each client's connections are counted here, as the leader would count them: the leader counts a standby's as its.
  const limited = (s: Server) => {
    limitConnections(s, { max: config.limits.maxConnections, perAddress: config.limits.connectionsPerAddress }, () => false, logger);
    return s;
  };
  const servers = [
    await listen(limited(web(standby.listener).on("upgrade", standby.upgrade)), config.listen),
    await listen(createServer(standby.metricsListener), config.metricsListen),
  ];
  if (config.agentSocket !== null) {
    rmSync(config.agentSocket, { force: true });
    servers.push(await listen(createServer(standby.listener).on("upgrade", standby.upgrade), config.agentSocket));
  }
  // A standby has nothing to write: a stop is an exit (its waiting session ends with the process).
  const quit = () => process.exit(0);
  process.once("SIGTERM", quit);
  process.once("SIGINT", quit);
  logger.info("ha.standby", {
    replica: name,
    cluster,
    leader: await leaderName(pool, cluster).catch(() => null),
    hint: "passes people's requests to the leader and takes over when the leader's session in PostgreSQL ends",
  });
  let leadership: Leadership | null = null;
  while (leadership === null) {
    try {
      leadership = await Leadership.campaign({
        url,
        name,
        cluster,
        logger,
        // Another replica may lead from the next moment on: the duties stop with the process, unflushed, at once.
        onLost: (reason) => {
          logger.error("ha.leadership_lost", { replica: name, reason, hint: "this replica stops now; a standby takes over" });
          process.exit(1);
        },
      });
    } catch (e) {
      logger.error("ha.campaign_failed", { replica: name, message: (e as Error).message, retryInMs: 2000 });
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  process.off("SIGTERM", quit);
  process.off("SIGINT", quit);
  logger.info("ha.leading", { replica: name });
  const endStandby = async () => {
    await Promise.all(
      servers.map(
        (s) =>
          new Promise((r) => {
            s.close(r);
            s.closeAllConnections();
          }),
      ),
    );
    await pool.end().catch(() => undefined);
  };
  return { leadership, endStandby };
}

/**
 * takeOffice is the new leader's first write: the replicas' key (made once, kept for good) that standbys vouch for
 * their clients with, and where this replica listens, for the standbys to pass requests to.
 */
export async function takeOffice(settings: SettingsRepo, config: HubConfig, logger: Logger): Promise<void> {
  const key = await settings.keep(REPLICA_KEY, randomBytes(32).toString("base64url"), Date.now());
  trustReplicas(key);
  await settings.set(LEADER_KEY, { name: config.replicaName, url: config.replicaUrl }, Date.now());
  logger.info("ha.leader", { replica: config.replicaName, url: config.replicaUrl });
}

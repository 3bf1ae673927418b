// The whohas hub: one Node process (bundled to dist/server.js, so the Next app dir is one level up) serving Next.js, tRPC and the agent WebSocket (STYLE 8).
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import next from "next";
import { parseEnv } from "./src/server/env.js";
import { createHubServer } from "./src/server/http.js";
import { Hub } from "./src/server/hub/hub.js";
import { loadKubeConfig, startInventory } from "./src/server/kube/inventory.js";
import { jsonLogger } from "@whohas/core";

async function main(): Promise<void> {
  const env = parseEnv();
  const logger = jsonLogger("hub", (line) => process.stderr.write(line));
  const app = next({ dev: env.dev, dir: fileURLToPath(new URL("..", import.meta.url)) });
  await app.prepare();
  const handle = app.getRequestHandler();
  const nextUpgrade = app.getUpgradeHandler();
  const hub = new Hub();
  if (env.kubernetes !== null) {
    const kc = loadKubeConfig(env.kubernetes === "in-cluster" ? null : env.kubernetes);
    const inventory = await startInventory(kc, () => hub.clusterChanged(), logger);
    hub.setCluster(inventory);
    logger.info("kube.connected", { source: env.kubernetes, server: kc.getCurrentCluster()?.server, metallb: inventory.metallb });
  } else {
    logger.info("kube.off", { hint: "set WHOHAS_KUBECONFIG, or run in a pod, to join traffic with Services and expected owners" });
  }
  const server = createHubServer({
    hub,
    agentToken: env.agentToken,
    logger,
    pages: (req, res) => void handle(req, res),
    otherUpgrade: env.dev ? (req, socket, head) => void nextUpgrade(req, socket, head) : undefined,
  });
  const tcp = server.createServer();
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(env.port, env.host, resolve);
  });
  logger.info("hub.listening", { url: `http://localhost:${env.port}`, host: env.host });
  const unix = env.agentSocket === null ? null : server.createServer();
  if (unix !== null && env.agentSocket !== null) {
    rmSync(env.agentSocket, { force: true });
    await new Promise<void>((resolve, reject) => {
      unix.once("error", reject);
      unix.listen(env.agentSocket ?? "", resolve);
    });
    logger.info("hub.listening_unix", { path: env.agentSocket });
  }
  const stop = (signal: string) => {
    logger.info("hub.stopping", { signal });
    server.gateway.close();
    tcp.close();
    unix?.close();
    tcp.closeAllConnections();
    unix?.closeAllConnections();
    setTimeout(() => process.exit(0), 500).unref();
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

main().catch((e: unknown) => {
  process.stderr.write(`whohas hub: ${(e as Error).message}\n`);
  process.exit(1);
});

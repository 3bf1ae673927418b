import type { Server } from "node:http";

/** listen starts `server` on host:port (or a Unix socket path) and resolves once it listens. */
export function listen(server: Server, at: { host: string; port: number } | string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once("error", (e: NodeJS.ErrnoException) =>
      reject(
        e.code === "EADDRINUSE"
          ? new Error(`${typeof at === "string" ? at : `${at.host}:${at.port}`} is in use: set another address in the config`)
          : e,
      ),
    );
    if (typeof at === "string") server.listen(at, () => resolve(server));
    else server.listen(at.port, at.host, () => resolve(server));
  });
}

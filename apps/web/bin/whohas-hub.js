#!/usr/bin/env node
// whohas-hub: the production entry of the hub (the bundled custom server). Run `pnpm build` first.
//
// The hub runs with a bounded V8 heap (WHOHAS_HEAP_MB, default 384 MB): without a bound V8 lets garbage pile up to
// about twice the live data before collecting it, and the process looks twice its size. A heap flag can only be set
// when Node starts, so unless one is given (node --max-old-space-size=N, or in NODE_OPTIONS) this file starts the
// hub again as its child with it, forwards signals, and exits as the child does.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const HEAP_FLAG = "--max-old-space-size";
const given = process.execArgv.some((a) => a.startsWith(HEAP_FLAG)) || (process.env.NODE_OPTIONS ?? "").includes(HEAP_FLAG);
// Next.js reads NODE_ENV when it loads; the hub is production unless told otherwise.
process.env.NODE_ENV ??= "production";

if (given) {
  await import("../dist/server.js");
} else {
  const mb = Number(process.env.WHOHAS_HEAP_MB ?? 384);
  if (!Number.isInteger(mb) || mb < 128) {
    process.stderr.write(`whohas-hub: WHOHAS_HEAP_MB must be a whole number of MB, at least 128 (got ${process.env.WHOHAS_HEAP_MB})\n`);
    process.exit(2);
  }
  const child = spawn(
    process.execPath,
    [...process.execArgv, `${HEAP_FLAG}=${mb}`, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    {
      // The IPC channel tells the hub when this process is gone, even by SIGKILL: it then dies too (see server.ts).
      stdio: ["inherit", "inherit", "inherit", "ipc"],
    },
  );
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => child.kill(sig));
  child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGKILL" ? 137 : signal === "SIGTERM" ? 143 : 1)));
}

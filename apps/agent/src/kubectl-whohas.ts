#!/usr/bin/env node
// kubectl-whohas: the kubectl plugin (`kubectl whohas ips`): the hub's read API from the terminal. Copy or link this
// file onto PATH as kubectl-whohas and kubectl finds it.
import { pluginEnv } from "./plugin/env.js";
import { runPlugin } from "./plugin/run.js";

/** exit leaves once stdout and stderr are flushed: output to a pipe is asynchronous, and `| jq` must get all of it. */
function exit(code: number): void {
  process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
}

// A signal ends the command as an exit does, so that the port-forward it runs goes with it (connect.ts kills it on
// exit): 128 + the signal's number, as a shell reports it.
for (const [signal, n] of [
  ["SIGINT", 2],
  ["SIGTERM", 15],
  ["SIGHUP", 1],
] as const)
  process.on(signal, () => process.exit(128 + n));

runPlugin(process.argv.slice(2), {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  env: pluginEnv(),
  now: Date.now,
}).then(exit, (e: unknown) => {
  process.stderr.write(`kubectl whohas: ${(e as Error).message}\n`);
  exit(2);
});

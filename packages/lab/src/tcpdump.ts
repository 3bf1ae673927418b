import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";

/** A Tcpdump is a running tcpdump: its standard output is a pipe (its lines with -l; empty with -w). */
export type Tcpdump = ChildProcessByStdio<null, Readable, Readable>;

/**
 * startTcpdump starts tcpdump with `args` inside the network namespace `ns`, as a person would capture on that host.
 * Wait for listening() before making the traffic it should see; SIGINT stops it and flushes what it writes.
 */
export function startTcpdump(ns: string, args: readonly string[]): Tcpdump {
  return spawn("ip", ["netns", "exec", ns, "tcpdump", ...args], { stdio: ["ignore", "pipe", "pipe"] });
}

/**
 * listening resolves once tcpdump says it is listening: on a loaded machine that can take seconds, and frames sent
 * before then are not captured. It fails with what tcpdump said if tcpdump exits first.
 */
export function listening(dump: Tcpdump): Promise<void> {
  return new Promise((resolve, reject) => {
    let said = "";
    const onData = (d: Buffer) => {
      said += d.toString();
      if (!said.includes("listening on")) return;
      settle();
      resolve();
    };
    const onExit = (code: number | null) => {
      settle();
      reject(new Error(`tcpdump exited (${code ?? "signal"}) before it listened: ${said.trim()}`));
    };
    const settle = () => {
      dump.stderr.off("data", onData);
      dump.off("exit", onExit);
    };
    dump.stderr.on("data", onData);
    dump.once("exit", onExit);
  });
}

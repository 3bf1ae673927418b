// A real, throwaway PostgreSQL server, for the hub's storage tests and the hub benchmark on PostgreSQL: the second
// engine the hub runs on, and only a real server shows how it behaves. scripts/setup.sh installs Debian's
// `postgresql` package, so a test that needs a server should FAIL when the binaries are missing, not skip: a skipped
// engine looks like a passing one. Use postgresAvailable() only to say so in a clear message. The hub's own tests
// import this file by its path: the lab runs the hub, so the hub cannot depend on the lab's package.
import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export interface TestPostgres {
  /** The connection string of the database `whohas`, as user `whohas` with no password. */
  readonly url: string;
  /** The CPU the server used so far, in clock ticks: its processes alive now and those ended (benchmarks). */
  cpuTicks(): number;
  /** Stops the server and removes its files; safe to call more than once. */
  stop(): Promise<void>;
}

const ROOT = "/usr/lib/postgresql";
const run = promisify(execFile);

/** binDir is the bin directory of the newest PostgreSQL that Debian installed, or null. Not PATH: Debian keeps them off it. */
function binDir(): string | null {
  const versions = existsSync(ROOT) ? readdirSync(ROOT).filter((v) => /^\d+$/.test(v)) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a)).find((v) => existsSync(join(ROOT, v, "bin", "initdb")));
  return newest === undefined ? null : join(ROOT, newest, "bin");
}

/** postgresAvailable tells whether the PostgreSQL server binaries are installed. */
export function postgresAvailable(): boolean {
  return binDir() !== null;
}

/** freePort asks the kernel for a free TCP port on 127.0.0.1 (never 5432, where Debian's own cluster may listen). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** ticksOf reads a process's CPU from /proc: its own (utime, stime), and with `ended` its reaped children's too. */
function ticksOf(pid: number, ended: boolean): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return Number(f[11]) + Number(f[12]) + (ended ? Number(f[13]) + Number(f[14]) : 0);
}

/** serverTicks is the CPU of the server whose data directory is `data`: the postmaster, its live and ended children. */
function serverTicks(data: string): number {
  const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(" ").filter(Boolean).map(Number);
  return ticksOf(pid, true) + children.reduce((n, c) => n + (existsSync(`/proc/${c}`) ? ticksOf(c, false) : 0), 0);
}

/** startPostgres makes a new cluster in a temporary directory, starts it on a free port and creates the database `whohas`. */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  if (bin === null) throw new Error(`PostgreSQL is not installed (no ${ROOT}/*/bin/initdb): run scripts/setup.sh`);
  const dir = mkdtempSync(join(tmpdir(), "whohas-pg-"));
  const data = join(dir, "data");
  const log = join(dir, "server.log");
  // initdb and postgres refuse to run as root, so as root they run as the `postgres` user that the Debian package
  // made, in a directory that user owns.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, id("-u"), id("-g"));
  }
  // server runs one of the PostgreSQL tools; its error tells the tool's stderr and the end of the server's log.
  const server = async (tool: string, args: string[]) => {
    const [file, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, tool), ...args]] : [join(bin, tool), args];
    try {
      await run(file, argv, { cwd: dir, encoding: "utf8", timeout: 60_000 });
    } catch (e) {
      const stderr = (e as { stderr?: string }).stderr?.trim() || String(e);
      const tail = existsSync(log) ? readFileSync(log, "utf8").trimEnd().split("\n").slice(-20).join("\n") : "(no server log)";
      throw new Error(`${tool} ${args.join(" ")} failed: ${stderr}\n--- server log (last lines) ---\n${tail}`);
    }
  };

  let stopping: Promise<void> | null = null;
  const stop = () => {
    // Immediate shutdown: the data is thrown away, so there is nothing to flush. The directory goes even if pg_ctl fails.
    stopping ??= server("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).finally(() =>
      rmSync(dir, { recursive: true, force: true }),
    );
    return stopping;
  };

  try {
    const port = await freePort();
    // The C locale: the same sorting everywhere, and no dependence on which locales the machine has generated.
    await server("initdb", ["-D", data, "--auth=trust", "-U", "whohas", "--encoding=UTF8", "--locale=C", "--no-sync"]);
    // The socket goes in our own directory, not /var/run/postgresql, and fsync is off: nothing here must survive a crash.
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    await server("pg_ctl", ["-D", data, "-o", options, "-w", "-l", log, "start"]);
    await server("createdb", ["-h", "127.0.0.1", "-p", String(port), "-U", "whohas", "whohas"]);
    return { url: `postgres://whohas@127.0.0.1:${port}/whohas`, cpuTicks: () => serverTicks(data), stop };
  } catch (e) {
    // Do not leave a half-started server or its files behind; the first error is the one worth telling.
    if (existsSync(join(data, "postmaster.pid"))) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

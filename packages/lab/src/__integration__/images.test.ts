// The images' recipes checked against the set-up the tests run, and their one step of their own (`pnpm deploy` of the
// hub and of the agent with production dependencies only) run outside any container: the results must start and
// answer, outside the repository. container-images.test.ts builds the images and runs them with podman.
import { afterAll, describe, expect, it } from "vitest";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT, freePort } from "../stack.js";
import { writeTwoResponders } from "./captures.js";
import { PAGES, bootstrapPages } from "./hub-client.js";

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "whohas-images-"));
// mkdtemp makes it 0700: the hub runs as UID 10001 below and must reach what is inside.
chmodSync(dir, 0o755);
const read = (p: string) => readFileSync(join(REPO_ROOT, p), "utf8");
const children: ChildProcess[] = [];

const mounts: string[] = [];

// `pnpm deploy --legacy` rewrites the workspace's lockfile (it marks workspace dependencies injected): the checkout
// must come out of the suite as it went in.
const LOCKFILE = join(REPO_ROOT, "pnpm-lock.yaml");
const lockfile = readFileSync(LOCKFILE, "utf8");
const restoreLockfile = () => {
  if (readFileSync(LOCKFILE, "utf8") !== lockfile) writeFileSync(LOCKFILE, lockfile);
};

afterAll(async () => {
  restoreLockfile();
  // The hub must be gone before its read-only mount can be undone: SIGTERM, which the launcher passes to the server
  // and exits with it (a SIGKILLed launcher would leave the server a moment, holding the mount).
  await Promise.all(
    children.map(async (c) => {
      if (c.exitCode !== null || c.signalCode !== null) return;
      const gone = new Promise((r) => c.once("exit", r));
      c.kill("SIGTERM");
      await gone;
    }),
  );
  for (const m of mounts) await exec("umount", [m]).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

/** stages splits a Dockerfile into its stages (FROM ... up to the next FROM). */
const stages = (text: string) => text.split(/^FROM /m).slice(1);

describe("container images", () => {
  it("build with the set-up's pnpm and Node, and keep libpcap and compilers out of the hub's run stage", () => {
    const pnpm = /PNPM_VERSION=(\S+)/.exec(read("scripts/setup.sh"))?.[1];
    const hub = read("deploy/images/hub.Dockerfile");
    const agent = read("deploy/images/agent.Dockerfile");
    for (const d of [hub, agent]) {
      expect(d).toContain(`pnpm@${pnpm}`);
      expect(d).toContain("--frozen-lockfile");
      // One pinned base, the Node major the project is verified with.
      expect(/^ARG NODE_IMAGE=node:(\d+)\.\d+\.\d+-bookworm-slim$/m.exec(d)?.[1]).toBe(process.versions.node.split(".")[0]);
    }
    const [, hubRun] = stages(hub);
    expect(hubRun).toMatch(/^USER 10001:10001$/m);
    expect(stages(hub)[0]).toContain("sh deploy/images/prune-hub.sh /out"); // the same step the hub test below runs
    expect(hubRun).not.toMatch(/libpcap|g\+\+|apt-get install/);
    const [, agentRun] = stages(agent);
    expect(agentRun).toMatch(/apt-get install -y --no-install-recommends libpcap0\.8 iproute2/);
    expect(agentRun).not.toMatch(/libpcap-dev|g\+\+/);
  });

  it("the hub's `pnpm deploy` output starts alone, as UID 10001 on a read-only copy, and serves its pages", async () => {
    const out = join(dir, "hub");
    await exec("pnpm", ["--filter", "@whohas/web", "deploy", "--prod", "--legacy", out], { cwd: REPO_ROOT, timeout: 120_000 }).finally(
      restoreLockfile,
    );
    await exec("sh", [join(REPO_ROOT, "deploy/images/prune-hub.sh"), out]);
    // As the image runs it (deploy/base/hub/deployment.yaml): not root, the application read-only, data on a volume.
    const app = join(dir, "app");
    mkdirSync(app);
    await exec("mount", ["--bind", out, app]);
    mounts.push(app);
    await exec("mount", ["-o", "remount,ro,bind", app]);
    const data = join(dir, "data");
    mkdirSync(data);
    chownSync(data, 10001, 10001);
    const port = await freePort();
    const hub = spawn(process.execPath, [join(app, "bin/whohas-hub.js")], {
      cwd: data,
      uid: 10001,
      gid: 10001,
      env: {
        PATH: process.env.PATH,
        HOME: data,
        WHOHAS_AGENT_TOKEN: "image-test-token-0123456789",
        WHOHAS_STORAGE_PATH: join(data, "hub.db"),
        WHOHAS_LISTEN: `127.0.0.1:${port}`,
        WHOHAS_KUBECONFIG: "off",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(hub);
    let stderr = "";
    hub.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const base = `http://127.0.0.1:${port}`;
    let login = 0;
    for (let i = 0; i < 100 && login !== 200; i++) {
      await new Promise((r) => setTimeout(r, 200));
      login = await fetch(`${base}/login`).then(
        (r) => r.status,
        () => 0,
      );
    }
    expect(login, stderr).toBe(200);
    // The bootstrap admin signs in and every page renders from the read-only application.
    const password = readFileSync(join(data, "initial-admin-password"), "utf8").trim();
    const { pages } = await bootstrapPages(base, password);
    expect(pages).toEqual(PAGES.map((page) => [page, 200]));
  });

  it("the agent's `pnpm deploy` output opens a capture and runs `whohas analyze` on a capture file", async () => {
    const out = join(dir, "agent");
    await exec("pnpm", ["--filter", "@whohas/agent", "deploy", "--prod", "--legacy", out], { cwd: REPO_ROOT, timeout: 120_000 }).finally(
      restoreLockfile,
    );
    const help = await exec(process.execPath, [join(out, "dist/main.js"), "--help"], { cwd: dir });
    expect(help.stdout).toMatch(/^Usage: whohas <command>/);
    // Its captures load from the output alone: @whohas/capture and the cap binding with patches/cap@0.2.1.patch
    // (stats() is the patch's, an unpatched binding has none).
    const opened =
      'import { PcapSource } from "@whohas/capture"; const s = new PcapSource("lo", "ether proto 0x88b5"); s.start(() => {}); console.log(JSON.stringify(s.stats())); s.close();';
    const capture = await exec(process.execPath, ["--input-type=module", "--eval", opened], { cwd: out });
    expect(JSON.parse(capture.stdout)).toEqual({ received: expect.any(Number), dropped: 0 });
    // A capture in which two MACs answer one request for 192.0.2.10: the analysis must say so (and exit 1).
    const file = join(dir, "two.pcap");
    writeTwoResponders(file);
    const r = await exec(process.execPath, [join(out, "dist/main.js"), "analyze", "--json", file], { cwd: dir }).then(
      () => ({ code: 0, stdout: "" }),
      (e: { code: number; stdout: string }) => e,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("192.0.2.10");
    expect(r.stdout).toContain("02:00:00:00:00:0b");
  });
});

// The container images cannot be built here (no Docker engine), so their recipe is checked against the set-up the
// tests run, and their one step of their own (`pnpm deploy` of the hub and of the agent with production
// dependencies only) is run for real: the results must start and answer, outside the repository.
import { afterAll, describe, expect, it } from "vitest";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { newArpReply, newArpRequest, pcapFileHeader, pcapRecord } from "@whohas/core";
import { REPO_ROOT, freePort } from "../stack.js";

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "whohas-images-"));
const read = (p: string) => readFileSync(join(REPO_ROOT, p), "utf8");
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
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
    expect(hubRun).not.toMatch(/libpcap|g\+\+|apt-get install/);
    const [, agentRun] = stages(agent);
    expect(agentRun).toMatch(/apt-get install -y --no-install-recommends libpcap0\.8 iproute2/);
    expect(agentRun).not.toMatch(/libpcap-dev|g\+\+/);
  });

  it("the hub's `pnpm deploy` output starts alone and serves the sign-in page", async () => {
    const out = join(dir, "hub");
    await exec("pnpm", ["--filter", "@whohas/web", "deploy", "--prod", "--legacy", out], { cwd: REPO_ROOT, timeout: 120_000 });
    const port = await freePort();
    const hub = spawn(process.execPath, [join(out, "bin/whohas-hub.js")], {
      cwd: dir,
      env: { PATH: process.env.PATH, WHOHAS_AGENT_TOKEN: "image-test-token-0123456789", WHOHAS_STORAGE_PATH: join(dir, "hub.db"), WHOHAS_LISTEN: `127.0.0.1:${port}`, WHOHAS_KUBECONFIG: "off" },
      stdio: "ignore",
    });
    children.push(hub);
    let login = 0;
    for (let i = 0; i < 100 && login !== 200; i++) {
      await new Promise((r) => setTimeout(r, 200));
      login = await fetch(`http://127.0.0.1:${port}/login`).then((r) => r.status, () => 0);
    }
    expect(login).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  });

  it("the agent's `pnpm deploy` output runs `whohas analyze` on a capture", async () => {
    const out = join(dir, "agent");
    await exec("pnpm", ["--filter", "@whohas/agent", "deploy", "--prod", "--legacy", out], { cwd: REPO_ROOT, timeout: 120_000 });
    const help = await exec(process.execPath, [join(out, "dist/main.js"), "--help"], { cwd: dir });
    expect(help.stdout).toMatch(/^Usage: whohas <command>/);
    // A capture in which two MACs answer one request for 192.0.2.10: the analysis must say so (and exit 1).
    const client = "02:00:00:00:00:01";
    const frames = [newArpRequest(client, "192.0.2.1", "192.0.2.10"), newArpReply("02:00:00:00:00:0a", "192.0.2.10", client, "192.0.2.1"), newArpReply("02:00:00:00:00:0b", "192.0.2.10", client, "192.0.2.1")];
    const file = join(dir, "two.pcap");
    writeFileSync(file, Buffer.concat([pcapFileHeader(1), ...frames.map((f, i) => pcapRecord(f, 1_700_000_000_000 + i))]));
    const r = await exec(process.execPath, [join(out, "dist/main.js"), "analyze", "--json", file], { cwd: dir }).then(
      () => ({ code: 0, stdout: "" }),
      (e: { code: number; stdout: string }) => e,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("192.0.2.10");
    expect(r.stdout).toContain("02:00:00:00:00:0b");
  });
});

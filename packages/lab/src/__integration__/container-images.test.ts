// The container images built for real (deploy/images/build.sh with podman, on a base made offline by make-base.sh)
// and run as a cluster runs them: the agent analyzes a capture file mounted into it, the hub serves as UID 10001 from a
// read-only root filesystem with its data on a volume. Where this machine cannot run a container at all, the tests
// skip and say why; a build that fails is a failure.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT, freePort } from "../stack.js";
import { writeTwoResponders } from "./captures.js";
import { PAGES, bootstrapPages } from "./hub-client.js";

const exec = promisify(execFile);
// Podman as root here: Debian's runc (crun refuses hybrid cgroups) and limits no higher than the shell's.
const PODMAN = ["--runtime", "runc"];
const LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"];
const podman = (args: string[], timeout = 60_000) => exec("podman", [...PODMAN, ...args], { timeout, maxBuffer: 64 << 20 });

const run = `${process.pid}-${Date.now().toString(36)}`;
const name = `localhost/whohas-test-${run}`;
let images = { hub: `${name}/hub:${run}`, agent: `${name}/agent:${run}` };

/**
 * The images scripts/test.sh builds in the background from its start (a cold build takes minutes): their name and
 * tag, and the files build.sh's output and exit status go to. Unset when this file runs alone: it builds them.
 */
const suite = {
  name: process.env.WHOHAS_SUITE_IMAGES_NAME,
  tag: process.env.WHOHAS_SUITE_IMAGES_TAG,
  log: process.env.WHOHAS_SUITE_IMAGES_LOG,
  status: process.env.WHOHAS_SUITE_IMAGES_STATUS,
};

/** suiteBuild waits for the suite's background build and returns build.sh's output; a failed build throws with it. */
async function suiteBuild(status: string, log: string): Promise<string> {
  const end = Date.now() + 1_500_000;
  while (!existsSync(status)) {
    if (Date.now() > end) throw new Error(`the suite's image build did not finish within 25 min (its output: ${log})`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  const output = readFileSync(log, "utf8");
  const code = readFileSync(status, "utf8").trim();
  if (code !== "0") throw new Error(`deploy/images/build.sh failed (exit ${code}):\n${output.split("\n").slice(-40).join("\n")}`);
  return output;
}
const containers = { hub: `whohas-test-hub-${run}`, agent: `whohas-test-agent-${run}` };
const dir = mkdtempSync(join(tmpdir(), "whohas-container-images-"));
chmodSync(dir, 0o755);

/** Why containers cannot run on this machine, or undefined when they can. */
let unavailable: string | undefined;

const errorText = (e: unknown) => {
  const { message, stderr } = e as { message?: string; stderr?: string };
  return (stderr ?? "").trim() || (message ?? String(e));
};

beforeAll(async () => {
  try {
    await podman(["version"]);
  } catch (e) {
    unavailable = `podman does not run here: ${errorText(e)}`;
    return;
  }
  // The base is kept between runs (its tag is a digest of its inputs), like the engine's layer cache.
  const base = (await exec("bash", [join(REPO_ROOT, "deploy/images/make-base.sh")], { timeout: 600_000 })).stdout.trim();
  try {
    await podman(["run", "--rm", ...LIMITS, "--network", "none", base, "/bin/true"]);
  } catch (e) {
    unavailable = `a container does not start here: ${errorText(e)}`;
    return;
  }
  // A container starts: from here on, whatever fails is the images' fault (a base whose node does not run included).
  await podman(["run", "--rm", ...LIMITS, "--network", "none", base, "node", "-e", "process.exit(0)"]);
  let stdout: string;
  if (suite.name !== undefined && suite.tag !== undefined && suite.log !== undefined && suite.status !== undefined) {
    stdout = await suiteBuild(suite.status, suite.log);
    images = { hub: `${suite.name}/hub:${suite.tag}`, agent: `${suite.name}/agent:${suite.tag}` };
  } else {
    const build = await exec("bash", [join(REPO_ROOT, "deploy/images/build.sh"), "--podman-host", "--name", name, "--tag", run], {
      timeout: 1_200_000,
      maxBuffer: 256 << 20,
    });
    stdout = build.stdout;
  }
  // The times and sizes, to be quoted.
  console.log(
    stdout
      .split("\n")
      .filter((l) => l.startsWith("build.sh:"))
      .join("\n"),
  );
}, 1_800_000);

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (unavailable !== undefined) return;
  for (const c of Object.values(containers)) await podman(["rm", "--force", "--volumes", "--ignore", c]).catch(() => undefined);
  // The tags only: layers still used by the engine's cache stay for the next run.
  for (const i of Object.values(images)) await podman(["rmi", "--force", i]).catch(() => undefined);
});

describe("container images (podman)", () => {
  it("the agent image runs `whohas analyze` on a capture file mounted into it", async (ctx) => {
    if (unavailable !== undefined) {
      console.warn(`skipped: ${unavailable}`);
      ctx.skip(unavailable);
    }
    // Two MACs answer one request for 192.0.2.10: the analysis must say so, and exit 1.
    const file = join(dir, "two.pcap");
    writeTwoResponders(file);
    const args = ["run", "--rm", "--name", containers.agent, ...LIMITS, "--network", "none", "--read-only"];
    const r = await podman([
      ...args,
      "--volume",
      `${file}:/captures/two.pcap:ro`,
      images.agent,
      "analyze",
      "--json",
      "/captures/two.pcap",
    ]).then(
      ({ stdout }) => ({ code: 0, stdout, stderr: "" }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain("192.0.2.10");
    expect(r.stdout).toContain("02:00:00:00:00:0b");
    // What `whohas agent` needs at run time and analyze never loads: libpcap through the cap binding (a capture opened
    // on lo), and iproute2's `ip -j addr` (the agent reads its interfaces and kube-ipvs0 with it).
    const capture = await podman([
      ...args,
      "--cap-add",
      "NET_RAW",
      "--entrypoint",
      "node",
      "--workdir",
      "/app",
      images.agent,
      "--input-type=module",
      "--eval",
      'import { PcapSource } from "@whohas/capture"; const s = new PcapSource("lo", "ether proto 0x88b5"); s.start(() => {}); console.log(JSON.stringify(s.stats())); s.close();',
    ]);
    expect(JSON.parse(capture.stdout)).toEqual({ received: expect.any(Number), dropped: 0 });
    const addr = await podman([...args, "--entrypoint", "ip", images.agent, "-j", "addr"]);
    expect((JSON.parse(addr.stdout) as { ifname: string }[]).map((i) => i.ifname)).toContain("lo");
    // The build host's CAs (make-base.sh's, for a TLS proxy in front of the registries) stay out of the running image.
    for (const image of [images.agent, images.hub]) {
      const env = (await podman(["image", "inspect", "--format", "{{json .Config.Env}}", image])).stdout;
      expect(JSON.parse(env) as string[]).not.toContainEqual(expect.stringMatching(/^NODE_EXTRA_CA_CERTS=./));
      const ca = await podman([...args, "--entrypoint", "ls", image, "/usr/local/share/ca-certificates/"]);
      expect(ca.stdout).not.toContain("host-trusted.crt");
    }
  });

  it("the hub image serves as UID 10001 from a read-only root filesystem, its data on a volume", async (ctx) => {
    if (unavailable !== undefined) {
      console.warn(`skipped: ${unavailable}`);
      ctx.skip(unavailable);
    }
    const port = await freePort();
    // The image's VOLUME gets an anonymous volume (removed with the container); everything else is read-only.
    await podman([
      "run",
      "--detach",
      "--name",
      containers.hub,
      ...LIMITS,
      // As the Deployment runs it: everything read-only but /tmp (podman would also make /run and /var/tmp writable).
      "--read-only",
      "--read-only-tmpfs=false",
      "--tmpfs",
      "/tmp",
      "--publish",
      `127.0.0.1:${port}:${port}`,
      "--env",
      "WHOHAS_AGENT_TOKEN=image-test-token-0123456789",
      "--env",
      "WHOHAS_STORAGE_PATH=/var/lib/whohas/hub.db",
      "--env",
      `WHOHAS_LISTEN=0.0.0.0:${port}`,
      "--env",
      "WHOHAS_KUBECONFIG=off",
      images.hub,
    ]);
    const base = `http://127.0.0.1:${port}`;
    let health = 0;
    for (let i = 0; i < 150 && health !== 200; i++) {
      await new Promise((r) => setTimeout(r, 200));
      health = await fetch(`${base}/healthz`).then(
        (r) => r.status,
        () => 0,
      );
    }
    const logs = async () => (await podman(["logs", containers.hub]).catch((e: unknown) => ({ stdout: "", stderr: errorText(e) }))).stderr;
    expect(health, await logs()).toBe(200);
    const login = await fetch(`${base}/login`);
    expect(login.status).toBe(200);
    // The page's own scripts (Next's client chunks, which the image's trim keeps or breaks) and Next's 404 page.
    const scripts = [...(await login.text()).matchAll(/<script[^>]+src="([^"]+)"/g)].map((m) => m[1] ?? "");
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) expect([src, (await fetch(new URL(src, base))).status]).toEqual([src, 200]);

    // Every process in the container runs as 10001, the hub's launcher (PID 1) and the server it starts.
    const uids = (await podman(["top", containers.hub, "huser", "user"])).stdout.trim().split("\n").slice(1);
    expect(uids.length).toBeGreaterThan(1);
    for (const line of uids) expect(line.trim().split(/\s+/)).toEqual(["10001", "10001"]);
    const write = await podman(["exec", containers.hub, "touch", "/app/written"]).then(
      () => "written",
      (e: unknown) => errorText(e),
    );
    expect(write).toMatch(/Read-only file system/);

    // The bootstrap admin signs in and the pages render from the read-only application.
    const password = (await podman(["exec", containers.hub, "cat", "/var/lib/whohas/initial-admin-password"])).stdout.trim();
    const { cookie, pages } = await bootstrapPages(base, password);
    expect(pages).toEqual(PAGES.map((page) => [page, 200]));
    const missing = await fetch(`${base}/no-such-page`, { headers: { cookie }, redirect: "manual" });
    expect([missing.status, (await missing.text()).includes("404")]).toEqual([404, true]);
  });
});

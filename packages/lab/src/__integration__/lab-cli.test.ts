import { describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));

// `whohas-lab kube` as a person or a script runs it: the test API server alone, driven by kubectl.
describe("whohas-lab kube", () => {
  it("starts the test API server empty, writes a kubeconfig kubectl can use, and stops on Ctrl-C", async () => {
    const dir = mkdtempSync(join(tmpdir(), "whohas-lab-kube-"));
    const kubeconfig = join(dir, "kubeconfig");
    const child = spawn(process.execPath, [CLI, "kube", "--kubeconfig-out", kubeconfig], { stdio: ["ignore", "pipe", "pipe"] });
    try {
      const banner = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes("Ctrl-C")) resolve(out);
        });
        child.on("exit", (code) => reject(new Error(`exited ${code}`)));
      });
      expect(banner).toMatch(/^test Kubernetes API server at https:\/\/127\.0\.0\.1:\d+/);
      expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);
      const ns = spawnSync("kubectl", ["--kubeconfig", kubeconfig, "get", "ns", "-o", "name"], { encoding: "utf8" });
      expect(ns.stderr).toBe("");
      expect(ns.stdout.split("\n").filter(Boolean).sort()).toEqual(["namespace/default", "namespace/kube-system"]);
      const leases = spawnSync("kubectl", ["--kubeconfig", kubeconfig, "get", "leases", "-A", "-o", "name"], { encoding: "utf8" });
      expect(leases.status).toBe(0);
      child.kill("SIGINT");
      expect(await new Promise((r) => child.on("exit", r))).toBe(0);
    } finally {
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("says what it needs without --kubeconfig-out", () => {
    const r = spawnSync(process.execPath, [CLI, "kube"], { encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe("whohas-lab: kube needs --kubeconfig-out FILE (where to write the kubeconfig)\n");
  });
});

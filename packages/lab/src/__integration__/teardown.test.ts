import { describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { writeFile } from "node:fs/promises";
import { collectGarbage, createLab } from "../lab.js";
import { ip } from "../sh.js";
import { eventually } from "./hub-client.js";

async function labNamespaces(id: string): Promise<string[]> {
  return (await ip("netns", "list"))
    .split("\n")
    .map((l) => l.split(" ")[0] ?? "")
    .filter((ns) => ns.includes(`-${id}-`));
}

describe("lab teardown", () => {
  it("destroy removes every namespace it made", async () => {
    const lab = await createLab({ nodes: 2, vips: 1 });
    expect(await labNamespaces(lab.names.id)).toHaveLength(4);
    await lab.destroy();
    expect(await labNamespaces(lab.names.id)).toEqual([]);
  });

  it("gc removes the lab of a dead run, processes inside it and its hub included, and leaves live labs alone", async () => {
    const dead = await createLab({ nodes: 1, vips: 1 });
    const live = await createLab({ nodes: 1, vips: 1 });
    try {
      // A pid that certainly belongs to nobody any more: a process that already exited.
      const gone = spawnSync("true").pid;
      await writeFile(`${dead.names.stateDir}/owner.json`, JSON.stringify({ pid: gone }));
      const orphan = spawn("ip", ["netns", "exec", dead.names.nodeNs(1), "sleep", "600"], { stdio: "ignore" });
      // The dead run's hub, outside any namespace, known by the config file its command line names.
      const hub = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", `${dead.names.stateDir}/hub.yaml`], { stdio: "ignore" });
      // Both are running (the orphan inside the namespace) before gc looks.
      await Promise.all([once(orphan, "spawn"), once(hub, "spawn")]);
      await eventually(
        async () => (await ip("netns", "pids", dead.names.nodeNs(1))).trim() !== "",
        (running) => running,
        5000,
      );
      const orphanExit = once(orphan, "exit");
      const hubExit = once(hub, "exit");
      const removed = await collectGarbage();
      expect(removed).toContain(dead.names.id);
      expect(removed).not.toContain(live.names.id);
      expect(await labNamespaces(dead.names.id)).toEqual([]);
      expect(await labNamespaces(live.names.id)).toHaveLength(3);
      await Promise.all([orphanExit, hubExit]);
      expect(hub.signalCode).toBe("SIGKILL");
    } finally {
      await dead.destroy();
      await live.destroy();
    }
  });
});

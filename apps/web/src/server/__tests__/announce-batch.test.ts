import { describe, expect, it } from "vitest";
import { ActionRefused } from "../actions/command.js";
import { AnnounceBatches, announceAll, type Announced, type Announcer, type BatchAudit } from "../actions/announce-batch.js";

/** Owners knows who owns which IP; each announce waits until the test ends it, as an agent's burst would last. */
class Owners implements Announcer {
  running = 0;
  most = 0;
  readonly started: string[] = [];
  #ends: (() => void)[] = [];
  constructor(
    readonly owners: ReadonlyMap<string, string>,
    readonly failing: ReadonlySet<string> = new Set(),
  ) {}
  clock = () => 1000 + this.started.length;
  ownerOf = (ip: string) => this.owners.get(ip) ?? null;
  async reannounce(ip: string): Promise<{ node: string; message: string }> {
    const node = this.owners.get(ip);
    if (node === undefined) throw new ActionRefused(`whohas does not know which node should own ${ip}`);
    this.started.push(ip);
    this.running++;
    this.most = Math.max(this.most, this.running);
    await new Promise<void>((r) => this.#ends.push(r));
    this.running--;
    if (this.failing.has(ip)) throw new Error(`the agent on ${node} did not report back`);
    return { node, message: "5 bursts" };
  }
  /** endAll ends every announce running now. */
  endAll(): void {
    const ends = this.#ends;
    this.#ends = [];
    for (const end of ends) end();
  }
}

const noWait = () => Promise.resolve();
const ipsOf = (n: number) => Array.from({ length: n }, (_, i) => `198.51.100.${i + 1}`);

describe("announceAll", () => {
  it("announces every IP from its owner, sixteen at a time, and reports each one's progress", async () => {
    const ips = ipsOf(40);
    const owners = new Owners(new Map(ips.map((ip, i) => [ip, `node-${i % 3}`])));
    const seen: string[][] = [];
    const done = announceAll(owners, ips, "olga", (l) => seen.push(l.map((a) => a.state)), noWait);
    // Wait for the first wave, then end waves until all are through.
    for (let i = 0; i < 100 && owners.started.length < ips.length; i++) {
      await new Promise((r) => setTimeout(r, 0));
      owners.endAll();
    }
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 0));
      owners.endAll();
    }
    const list = await done;
    expect(owners.most).toBe(16);
    expect(owners.started.sort()).toEqual([...ips].sort());
    expect(list.map((a) => [a.ip, a.node, a.state])).toEqual(ips.map((ip, i) => [ip, `node-${i % 3}`, "ok"]));
    expect(list.every((a) => a.at !== null)).toBe(true);
    // Progress was reported as IPs started and ended: the first report has one announcing, the rest waiting.
    expect(seen[0]?.filter((s) => s === "announcing")).toHaveLength(1);
    expect(seen.at(-1)?.every((s) => s === "ok")).toBe(true);
  });

  it("leaves an IP without a known owner alone and says why; a failed announce is failed, the others go on", async () => {
    const owners = new Owners(
      new Map([
        ["198.51.100.1", "node-a"],
        ["198.51.100.3", "node-b"],
      ]),
      new Set(["198.51.100.3"]),
    );
    const done = announceAll(owners, ["198.51.100.1", "198.51.100.2", "198.51.100.3"], "olga", () => undefined, noWait);
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 0));
      owners.endAll();
    }
    const list: Announced[] = await done;
    expect(list).toEqual([
      { ip: "198.51.100.1", node: "node-a", at: expect.any(Number), state: "ok", message: "5 bursts" },
      {
        ip: "198.51.100.2",
        node: null,
        at: null,
        state: "refused",
        message: "whohas does not know which node should own 198.51.100.2",
      },
      { ip: "198.51.100.3", node: "node-b", at: expect.any(Number), state: "failed", message: "the agent on node-b did not report back" },
    ]);
    expect(owners.started).toEqual(["198.51.100.1", "198.51.100.3"]);
  });
});

/** settle ends every announce running until `done` holds (a batch starts its IPs 50 ms apart). */
async function settle(owners: Owners, done: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !done(); i++) {
    await new Promise((r) => setTimeout(r, 10));
    owners.endAll();
  }
}

/** recorder is an audit log that keeps its entries in `into`. */
const recorder = (into: BatchAudit[]) => (e: BatchAudit) => {
  into.push(e);
  return Promise.resolve();
};

describe("AnnounceBatches", () => {
  const ips = ipsOf(3);
  const owners = () => new Owners(new Map(ips.map((ip) => [ip, "node-a"])));

  it("runs one batch per group: a second operator joins it; a third group waits for one of two to end", async () => {
    const o = owners();
    const audit: BatchAudit[] = [];
    const batches = new AnnounceBatches(o, recorder(audit));
    const web = await batches.start("Service demo/web", ips, "olga");
    expect(await batches.start("Service demo/web", ips, "vic")).toBe(web);
    await batches.start("pool public", ips, "olga");
    await expect(batches.start("Service demo/api", ips, "olga")).rejects.toThrow(
      new ActionRefused("2 re-announcements are running already (Service demo/web, pool public): wait for one to finish"),
    );
    expect(audit.map((e) => [e.actor, e.outcome, e.detail])).toEqual([
      ["olga", "ok", "3 IPs, each from its expected owner"],
      ["vic", "ok", "joined the re-announcement olga started"],
      ["olga", "ok", "3 IPs, each from its expected owner"],
      ["olga", "refused", expect.stringContaining("2 re-announcements are running already")],
    ]);
    await settle(o, () => web.endedAt !== null && batches.latest("pool public")?.endedAt !== null);
    expect(web.endedAt).not.toBeNull();
    expect(batches.latest("Service demo/web")?.ips.map((a) => a.state)).toEqual(["ok", "ok", "ok"]);
    // Both ended: the third group starts now.
    expect((await batches.start("Service demo/api", ips, "olga")).endedAt).toBeNull();
  });

  it("refuses a group without an IP announced over ARP, audited; names at most twenty IPs in the audit", async () => {
    const audit: BatchAudit[] = [];
    const batches = new AnnounceBatches(owners(), recorder(audit));
    await expect(batches.start("pool bgp-only", [], "olga")).rejects.toThrow(/pool bgp-only has no IP announced over ARP\/NDP/);
    await batches.start("pool big", ipsOf(40), "olga");
    expect(audit.map((e) => [e.outcome, e.input])).toEqual([
      ["refused", { what: "pool bgp-only", count: 0, ips: [] }],
      ["ok", { what: "pool big", count: 40, ips: ipsOf(20) }],
    ]);
  });

  it("ends a batch whose IPs all fail, each with why, so that its slot is free again", async () => {
    const broken: Announcer = {
      clock: () => 1000,
      ownerOf: () => {
        throw new Error("inventory gone");
      },
      reannounce: () => Promise.reject(new Error("unreachable")),
    };
    const batches = new AnnounceBatches(broken, noWait);
    const b = await batches.start("Service demo/web", ips, "olga");
    for (let i = 0; i < 50 && b.endedAt === null; i++) await new Promise((r) => setTimeout(r, 10));
    expect(b.endedAt).toBe(1000);
    expect(b.ips.map((a) => [a.state, a.message])).toEqual(ips.map(() => ["failed", "inventory gone"]));
  });
});

import { describe, expect, it } from "vitest";
import { ActionRefused } from "../actions/actions.js";
import { announceAll, type Announced, type Announcer } from "../actions/announce-batch.js";

/** Owners knows who owns which IP; each announce waits until the test ends it, as an agent's burst would last. */
class Owners implements Announcer {
  running = 0;
  most = 0;
  readonly started: string[] = [];
  readonly #ends = new Map<string, () => void>();
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
    await new Promise<void>((r) => this.#ends.set(ip, r));
    this.running--;
    if (this.failing.has(ip)) throw new Error(`the agent on ${node} did not report back`);
    return { node, message: "5 bursts" };
  }
  /** endAll ends every announce running now. */
  endAll(): void {
    for (const [ip, end] of this.#ends) {
      this.#ends.delete(ip);
      end();
    }
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

import { describe, expect, it } from "vitest";
import { Hub } from "../hub/hub.js";
import { appRouter } from "../api/root.js";
import { createCallerFactory } from "../api/trpc.js";
import { aggregate, callerContext, hello, observations } from "./helpers.js";

interface Tracked<T> {
  id: string;
  data: T;
}
/** On the server a tracked event is [id, data, marker]; the SSE link turns it into { id, data } for the client. */
const untrack = <T>(v: unknown): Tracked<T> => {
  const [id, data] = v as [string, T];
  return { id, data };
};

/** subscribed resolves once a subscription waits on the hub's feed for its next change. */
async function subscribed(hub: Hub): Promise<void> {
  for (let i = 0; hub.feed.waiting === 0; i++) {
    if (i === 200) throw new Error("no subscription waits on the feed");
    await new Promise((r) => setImmediate(r));
  }
}

async function next<T>(it: AsyncIterator<unknown>, ms = 2000): Promise<Tracked<T> | "timeout"> {
  const timer = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), ms));
  const r = await Promise.race([it.next(), timer]);
  return r === "timeout" ? r : untrack<T>(r.value);
}

describe("live subscriptions", () => {
  it("send tracked values, and a client resuming with the current id gets only what changes after", async () => {
    const hub = await Hub.open();
    const caller = createCallerFactory(appRouter)(callerContext(hub, "viewer"));
    const a = (await caller.agents.live({})) as AsyncIterable<unknown>;
    const ita = a[Symbol.asyncIterator]();
    const first = await next<unknown[]>(ita);
    expect(first).toMatchObject({ data: [] });
    const id = (first as Tracked<unknown[]>).id;

    const b = (await caller.agents.live({ lastEventId: id })) as AsyncIterable<unknown>;
    const itb = b[Symbol.asyncIterator]();
    const pending = next<{ node: string }[]>(itb, 1500);
    // The resumed subscription waits on the feed before the change comes: it is told live, not by catching up.
    await subscribed(hub);
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    const resumed = await pending;
    // Nothing was resent for the value the client already had: its first event is the change.
    expect(resumed).toMatchObject({ data: [{ node: "node-a" }] });
    expect((resumed as Tracked<unknown>).id).not.toBe(id);
    await ita.return?.();
    await itb.return?.();
  });

  it("stream the IP list once, then only the IPs that changed; a client resuming from a snapshot gets only deltas", async () => {
    const hub = await Hub.open();
    const caller = createCallerFactory(appRouter)(callerContext(hub, "viewer"));
    const reply = (ip: string) => hub.observe("node-a", observations([aggregate(ip, "reply", "02:00:5e:00:00:0a", Date.now())]));
    hub.connect(hello("node-a", "02:00:5e:00:00:0a"));
    reply("192.0.2.1");
    reply("192.0.2.2");
    const snap = await caller.ips.snapshot();
    expect(snap.rows.map((r) => r.ip)).toEqual(["192.0.2.1", "192.0.2.2"]);

    const fresh = ((await caller.ips.live({})) as AsyncIterable<unknown>)[Symbol.asyncIterator]();
    expect(await next<{ full: boolean; ips: { ip: string }[] }>(fresh)).toMatchObject({
      data: { full: true, ips: [{ ip: "192.0.2.1" }, { ip: "192.0.2.2" }] },
    });

    const resumed = ((await caller.ips.live({ lastEventId: snap.id })) as AsyncIterable<unknown>)[Symbol.asyncIterator]();
    const pending = next<{ full: boolean; ips: { ip: string }[] }>(resumed, 2500);
    await subscribed(hub);
    reply("192.0.2.2");
    expect(await pending).toMatchObject({ data: { full: false, ips: [{ ip: "192.0.2.2" }] } });
    await fresh.return?.();
    await resumed.return?.();
  });
});

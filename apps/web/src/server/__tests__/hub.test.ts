import { describe, expect, it } from "vitest";
import { AGENT_SILENCE_MS, Hub } from "../hub/hub.js";

const hello = { v: 1 as const, type: "hello" as const, node: "node-a", agentVersion: "t", interfaces: [{ name: "eth0", mac: "02:00:5e:00:00:0a", up: true }] };

describe("Hub", () => {
  it("shows a silent agent as down after 30 s, and a disconnected one at once", () => {
    let now = 0;
    const hub = new Hub({ clock: () => now });
    hub.connect(hello);
    expect(hub.agents()[0]?.up).toBe(true);
    now = AGENT_SILENCE_MS + 1;
    expect(hub.agents()[0]?.up).toBe(false);
    hub.heartbeat("node-a");
    expect(hub.agents()[0]?.up).toBe(true);
    hub.disconnect("node-a");
    expect(hub.agents()[0]).toMatchObject({ up: false, connected: false });
  });

  it("keeps an agent connected while an older socket of the same node closes late", () => {
    const hub = new Hub({ clock: () => 0 });
    hub.connect(hello);
    hub.connect(hello);
    hub.disconnect("node-a");
    expect(hub.agents()[0]?.connected).toBe(true);
  });

  it("wakes subscribers on change, coalescing bursts, and ends on abort", async () => {
    const hub = new Hub({ clock: () => 0 });
    const ac = new AbortController();
    const it = hub.changes(ac.signal, 60_000);
    expect((await it.next()).done).toBe(false); // immediate first yield
    const next = it.next();
    hub.connect(hello);
    hub.connect(hello);
    expect((await next).done).toBe(false);
    const ended = it.next();
    ac.abort();
    expect((await ended).done).toBe(true);
  });
});

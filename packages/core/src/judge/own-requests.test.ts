import { describe, expect, it } from "vitest";
import type { ObservationAggregate } from "../wire.js";
import { OwnRequests, SKEW_MS, clientEntries } from "./own-requests.js";

const VIP = "198.51.100.7";
const NODE = ["192.0.2.10", "02:00:5e:00:00:0a"];

describe("whohas's own requests", () => {
  it("names a probe's request by its asker and time, on whichever VLAN the agents saw it", () => {
    const own = new OwnRequests();
    own.expect(VIP, NODE, 1_000_000, 1000);
    expect(own.has(VIP, "192.0.2.10", 1_000_000)).toBe(true);
    expect(own.has(`${VIP}@30`, "192.0.2.10", 1_000_000)).toBe(true);
    expect(own.has(VIP, "02:00:5e:00:00:0a", 1_000_500)).toBe(true);
    // Another asker, another IP, or a time out of the window (the clocks' skew included) is a client's.
    expect(own.has(VIP, "192.0.2.11", 1_000_000)).toBe(false);
    expect(own.has("198.51.100.8", "192.0.2.10", 1_000_000)).toBe(false);
    expect(own.has(VIP, "192.0.2.10", 1_000_000 - SKEW_MS - 1)).toBe(false);
    expect(own.has(VIP, "192.0.2.10", 1_000_000 + 1000 + SKEW_MS + 1)).toBe(false);
    expect(own.has(VIP, "192.0.2.10", 1_000_000 + 1000 + SKEW_MS)).toBe(true);
  });

  it("forgets probes once no report can name them, and leaves only clients' requests among aggregates", () => {
    const own = new OwnRequests();
    own.expect(VIP, NODE, 1_000_000, 1000);
    own.prune(1_000_000 + 1000 + 5000);
    expect(own.size).toBe(1);
    own.prune(1_000_000 + 1000 + SKEW_MS + 60_000);
    expect(own.size).toBe(0);
    own.expect(VIP, NODE, 1_000_000, 1000);
    const seen = { ip: VIP, iface: "eth0", count: 1, firstSeen: 1_000_000, lastSeen: 1_000_000, targetMac: null, ethSrc: null };
    const agg = (kind: ObservationAggregate["kind"], mac: string): ObservationAggregate => ({ ...seen, kind, mac, ethernetMismatch: 0 });
    const probe = agg("request", "02:00:5e:00:00:0a");
    const client = agg("request", "02:00:5e:00:00:01");
    const reply = agg("reply", "02:00:5e:00:00:0a");
    const entries = [probe, client, reply];
    expect(clientEntries(entries, (ip, a, t) => own.has(ip, a, t))).toEqual([client, reply]);
    // Nothing to leave out: the same array.
    expect(clientEntries([client, reply], (ip, a, t) => own.has(ip, a, t))).toStrictEqual([client, reply]);
  });
});

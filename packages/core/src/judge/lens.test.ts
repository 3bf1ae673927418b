import { describe, expect, it } from "vitest";
import { name, names, type Lens } from "./lens.js";

const NODE_MAC = "02:00:5e:00:00:0a";
const INTEL = "00:1b:21:00:00:2a";
const VM = "52:54:00:12:34:56";
const nodeOf = (m: string) => (m === NODE_MAC ? "node-a" : null);
const watches = () => false;
/** The hub's lens: it knows the nodes' MACs and the IEEE registry (here, one Intel prefix). */
const hub: Lens = { nodeOf, watches, vendorOf: (m) => (m.startsWith("00:1b:21") ? "Intel Corporate" : null) };
/** A lens with no registry (`whohas analyze` offline): a MAC with no node is still said to be none. */
const bare: Lens = { nodeOf, watches };

describe("name", () => {
  it.each([
    { case: "a node's MAC is its node", mac: NODE_MAC, lens: hub, want: "node-a" },
    { case: "a stranger by its vendor", mac: INTEL, lens: hub, want: `${INTEL} (Intel Corporate, not a cluster node)` },
    { case: "a stranger of no registered vendor", mac: VM, lens: hub, want: `${VM} (not a cluster node)` },
    { case: "a stranger, with no registry to ask", mac: INTEL, lens: bare, want: `${INTEL} (not a cluster node)` },
  ])("$case", ({ mac, lens, want }) => {
    expect(name(mac, lens)).toBe(want);
  });
});

describe("names", () => {
  it.each([
    { case: "one", macs: [INTEL], want: `${INTEL} (Intel Corporate, not a cluster node)` },
    { case: "two", macs: [NODE_MAC, INTEL], want: `node-a and ${INTEL} (Intel Corporate, not a cluster node)` },
    {
      case: "three",
      macs: [NODE_MAC, VM, INTEL],
      want: `node-a, ${VM} (not a cluster node) and ${INTEL} (Intel Corporate, not a cluster node)`,
    },
  ])("lists $case as a sentence does", ({ macs, want }) => {
    expect(names(macs, hub)).toBe(want);
  });
});

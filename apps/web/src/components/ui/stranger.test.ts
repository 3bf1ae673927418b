import { describe, expect, it } from "vitest";
import { holders, macText, notANode, whoText } from "./stranger";

const INTEL = "00:1b:21:00:00:2a";
const VM = "52:54:00:12:34:56";
const NODE = "02:00:00:00:00:01";

describe("naming a host that is no node", () => {
  it.each([
    { case: "its vendor", vendor: "Intel Corporate", want: "not a cluster node, Intel Corporate" },
    { case: "no vendor registered", vendor: null, want: "not a cluster node, vendor not registered" },
    { case: "an older record without vendors", vendor: undefined, want: "not a cluster node, vendor not registered" },
  ])("says it is not a node, with $case", ({ vendor, want }) => {
    expect(notANode(vendor)).toBe(want);
  });

  it.each([
    {
      case: "a stranger",
      mac: INTEL,
      named: { mac: INTEL, node: null, vendor: "Intel Corporate" },
      want: `${INTEL} (not a cluster node, Intel Corporate)`,
    },
    {
      case: "a stranger of no vendor",
      mac: VM,
      named: { mac: VM, node: null, vendor: null },
      want: `${VM} (not a cluster node, vendor not registered)`,
    },
    { case: "a node's MAC", mac: NODE, named: { mac: NODE, node: "node-1", vendor: null }, want: NODE },
    { case: "a MAC the page was not told of", mac: NODE, named: undefined, want: NODE },
  ])("lists $case", ({ mac, named, want }) => {
    expect(macText(mac, named)).toBe(want);
  });

  it.each([
    { case: "a node by its name", r: { mac: NODE, node: "node-1", vendor: null }, want: "node-1" },
    {
      case: "a stranger by MAC and vendor",
      r: { mac: INTEL, node: null, vendor: "Intel Corporate" },
      want: `${INTEL} (not a cluster node, Intel Corporate)`,
    },
  ])("names $case in a sentence", ({ r, want }) => {
    expect(whoText(r)).toBe(want);
  });
});

describe("holders", () => {
  const node = { mac: NODE, node: "node-1", vendor: null, answering: true };
  const quietNode = { mac: "02:00:00:00:00:02", node: "node-2", vendor: null, answering: false };
  const stranger = { mac: INTEL, node: null, vendor: "Intel Corporate", answering: false };
  it.each([
    { case: "a stranger heard by the last probe, while its address conflict holds", findings: ["address-conflict"], want: [NODE, INTEL] },
    { case: "no stranger once its conflict cleared", findings: ["multi-responder"], want: [NODE] },
    { case: "no stranger before it is called a conflict", findings: [], want: [NODE] },
  ])("lists $case, and never a node that stopped answering", ({ findings, want }) => {
    expect(
      holders(
        [node, quietNode, stranger],
        findings.map((type) => ({ type })),
      ).map((r) => r.mac),
    ).toEqual(want);
  });
});

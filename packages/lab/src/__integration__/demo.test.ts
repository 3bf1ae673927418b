import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_VLAN_IPS, startDemo } from "../demo.js";
import type { Stack } from "../stack.js";
import { api, eventually, findingsIn, passed, type IncidentView } from "./hub-client.js";

/** The demo's split brain: two nodes' speakers answer for the address on VLAN 40 (startDemo). */
const SPLIT_VLAN_IP = DEMO_VLAN_IPS[1];

// The demo as `whohas-lab demo` runs it: what a new user sees first must say each problem once, one incident per IP.
describe("the demo", () => {
  let stack: Stack;
  const openIpIncidents = async () =>
    (await api<IncidentView[]>(stack.url, stack.viewerToken, "incidents?state=open")).filter(
      (i) => !i.ip.startsWith("node/") && !i.ip.startsWith("cluster/"),
    );
  /** subject is an incident's key as the API's paths name it (the address, with "@VLAN" when seen in one). */
  const subject = (i: IncidentView) => (i.vlan === null || i.vlan === undefined ? i.ip : `${i.ip}@${i.vlan}`);
  const holding = (list: readonly IncidentView[], key: string) =>
    findingsIn(list.filter((i) => subject(i) === key))
      .filter((f) => f.resolvedAt === null)
      .map((f) => f.type)
      .sort();

  beforeAll(async () => {
    stack = await startDemo({ nodes: 3, vips: 3, port: 0 });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it("opens one incident per problem IP: its three multi-responder IPs and its VLAN split brain, each finding a facet", async () => {
    const vips = stack.lab.vips;
    expect(vips).toHaveLength(3);
    // demo/web-1 is externalTrafficPolicy Local (its endpoint on node-3): the nodes without one drop its traffic.
    const expected = new Map<string, string[]>([
      [vips[0] ?? "", ["multi-responder", "wrong-owner"]],
      [vips[1] ?? "", ["multi-responder", "silent-drop", "wrong-owner"]],
      [vips[2] ?? "", ["multi-responder", "wrong-owner"]],
      // The address on VLAN 40, answered by two nodes' speakers that both announce it: one incident for both findings.
      [SPLIT_VLAN_IP, ["multi-responder", "split-brain"]],
    ]);
    const complete = (list: readonly IncidentView[]) =>
      [...expected].every(([ip, types]) => types.every((t) => holding(list, ip).includes(t)));
    await eventually(openIpIncidents, complete, 60_000);
    // Another judging pass on what has arrived since: nothing else opens, nothing is split in two.
    await passed(stack, "judge");
    const open = await openIpIncidents();
    const subjects = open.map(subject).sort();
    expect(subjects).toEqual([...expected.keys()].sort());
    for (const [ip, types] of expected) expect(holding(open, ip), ip).toEqual(types);
    // The three Service IPs are named after their worst finding: several nodes answer.
    for (const ip of vips) expect(open.find((i) => subject(i) === ip)?.type).toBe("multi-responder");
    process.stdout.write(`demo incidents: ${open.map((i) => `${subject(i)} [${holding(open, subject(i)).join(", ")}]`).join("; ")}\n`);
  }, 120_000);
});

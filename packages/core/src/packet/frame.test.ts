import { describe, expect, it } from "vitest";
import { decodeFrame, newFrameFields, roleOf } from "./frame.js";
import { LINKTYPE_ETHERNET } from "./link.js";
import { newArpRequest } from "./arp.js";
import { formatIPv4Number } from "./addr.js";

describe("decodeFrame on a window of a larger buffer", () => {
  const frame = newArpRequest("02:00:5e:00:00:01", "192.0.2.1", "192.0.2.200");
  const buf = new Uint8Array(10 + frame.length + 10).fill(0xee);
  buf.set(frame, 10);

  it("reads the frame between start and end", () => {
    const f = newFrameFields();
    expect(decodeFrame(buf, LINKTYPE_ETHERNET, f, 10, 10 + frame.length)).toBeNull();
    expect([f.kind, formatIPv4Number(f.ip4), formatIPv4Number(f.peer4)]).toEqual(["request", "192.0.2.200", "192.0.2.1"]);
  });

  it("never reads past end, even when the buffer goes on", () => {
    const f = newFrameFields();
    expect(decodeFrame(buf, LINKTYPE_ETHERNET, f, 10, 10 + 30)).toMatchObject({
      reason: "truncated",
      message: "arp: Ethernet/IPv4 packet needs 28 bytes, only 16 present",
    });
    expect(decodeFrame(buf, LINKTYPE_ETHERNET, f, 10, 10 + 13)).toMatchObject({
      reason: "truncated",
      message: "ethernet: header needs 14 bytes, only 13 present",
    });
  });
});

describe("roleOf", () => {
  it.each([
    ["request", "ask"],
    ["probe", "ask"],
    ["ns", "ask"],
    ["ns-dad", "ask"],
    ["reply", "answer"],
    ["na-solicited", "answer"],
    ["gratuitous-request", "announce"],
    ["gratuitous-reply", "announce"],
    ["na-unsolicited", "announce"],
  ] as const)("%s is %s", (kind, role) => expect(roleOf(kind)).toBe(role));
});

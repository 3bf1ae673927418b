import { writeFileSync } from "node:fs";
import { newArpReply, newArpRequest, pcapFileHeader, pcapRecord } from "@whohas/core";

/** writeTwoResponders writes `file`: a pcap in which 02:00:00:00:00:0a and 02:00:00:00:00:0b answer one request for 192.0.2.10. */
export function writeTwoResponders(file: string): void {
  const client = "02:00:00:00:00:01";
  const frames = [
    newArpRequest(client, "192.0.2.1", "192.0.2.10"),
    newArpReply("02:00:00:00:00:0a", "192.0.2.10", client, "192.0.2.1"),
    newArpReply("02:00:00:00:00:0b", "192.0.2.10", client, "192.0.2.1"),
  ];
  writeFileSync(file, Buffer.concat([pcapFileHeader(1), ...frames.map((f, i) => pcapRecord(f, 1_700_000_000_000 + i))]));
}

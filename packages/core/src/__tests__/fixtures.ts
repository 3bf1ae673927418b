// Shared test fixtures: addresses from the documentation ranges (RFC 5737, RFC 7042).
import { execFileSync } from "node:child_process";
export const CLIENT_MAC = "02:00:5e:00:00:01";
export const NODE_A_MAC = "02:00:5e:00:00:0a";
export const NODE_B_MAC = "02:00:5e:00:00:0b";
export const CLIENT_IP = "192.0.2.1";
export const VIP = "192.0.2.200";

/** hex turns "ff ff 08 06 ..." into bytes; spaces, newlines and "# comments" are ignored. */
export function hex(s: string): Uint8Array {
  const clean = s.replace(/#.*$/gm, "").replace(/\s+/g, "");
  return Uint8Array.from(clean.match(/../g) ?? [], (h) => parseInt(h, 16));
}

/** has tells whether a command-line tool is installed (the independent readers, Wireshark's, are set up by the README). */
export function has(tool: string): boolean {
  try {
    execFileSync(tool, ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

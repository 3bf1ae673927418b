import type { Format } from "../store/outbox.js";
import { Egress, type EgressPolicy } from "./egress.js";

/** A Receiver is where notifications go, from the config file, the environment, or Settings. */
export interface Receiver {
  readonly name: string;
  readonly url: string;
  readonly format: Format;
  /** Signs every request (Standard Webhooks); null: unsigned (Slack checks its own URL). */
  readonly secret: string | null;
  readonly source: "config" | "env" | "settings";
}

/** AlertPolicy is Alertmanager's noise control, and whohas' cap for a flapping IP. */
export interface AlertPolicy {
  /** How long the first finding of an IP waits for the others before one notification goes out (0: at once). */
  readonly groupWaitMs: number;
  /**
   * How long a finding that joins an incident already notified waits after that incident's last notification before
   * the update goes out (Alertmanager's group_interval): what joins meanwhile goes out with it.
   */
  readonly groupIntervalMs: number;
  /** How often an IP that stays broken is notified again. */
  readonly repeatIntervalMs: number;
  /** At most this many notifications per IP and receiver in any hour (a flapping IP). */
  readonly maxPerIpPerHour: number;
  /**
   * At most this many notifications per receiver in a minute, whatever the IPs (a storm of incidents, or invented
   * IPs, must not page a hundred times): past it they are held back, counted and logged once a minute.
   */
  readonly maxPerMinute: number;
  /** Whether a notification goes out when an IP's findings clear. */
  readonly sendResolved: boolean;
  /**
   * Only these hosts (names, addresses or CIDRs) may receive; empty: any host on a public address. A listed host may
   * resolve to a private or loopback address (an on-premise receiver).
   */
  readonly allowHosts: readonly string[];
  /** Receivers on private networks (RFC 1918, shared address space, IPv6 unique local) are allowed. */
  readonly allowPrivate: boolean;
  /** The dashboard's address, for links in notifications. */
  readonly externalUrl: string | null;
}

export const DEFAULT_POLICY: AlertPolicy = {
  groupWaitMs: 10_000,
  // Alertmanager's default group_interval.
  groupIntervalMs: 5 * 60_000,
  repeatIntervalMs: 4 * 3_600_000,
  maxPerIpPerHour: 6,
  maxPerMinute: 30,
  sendResolved: true,
  allowHosts: [],
  allowPrivate: false,
  externalUrl: null,
};

/**
 * checkUrl says why a receiver URL is refused, or null when it is fine: http or https only, no credentials in it
 * (put a secret in the receiver instead), and a host the egress policy allows (an address written in the URL is
 * checked here; a name is checked on every send, on the addresses it resolves to).
 */
export function checkUrl(text: string, policy: EgressPolicy): string | null {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return `"${text}" is not a URL`;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return `only http and https URLs can receive notifications, not ${u.protocol}`;
  if (u.username !== "" || u.password !== "") return "the URL must not carry a user or password (give the receiver a secret instead)";
  return new Egress(policy).hostRefusal(u.hostname);
}

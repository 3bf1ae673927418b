/** A NamedMac is a MAC with its node (null: no whohas agent reports it) and the vendor its prefix is registered to. */
export interface NamedMac {
  readonly mac: string;
  readonly node: string | null;
  /** Absent when the page was not told (an incident recorded before vendors were). */
  readonly vendor?: string | null;
}

/** notANode says what a MAC no agent reports is: "not a cluster node, Intel Corporate". */
export function notANode(vendor: string | null | undefined): string {
  return `not a cluster node, ${vendor ?? "vendor not registered"}`;
}

/**
 * macText is how a list of MACs shows one: the MAC, and for a host that is no node what it is
 * ("00:1b:21:00:00:2a (not a cluster node, Intel Corporate)"). A MAC the page knows nothing of stays bare.
 */
export function macText(mac: string, named: NamedMac | undefined): string {
  return named?.node !== null ? mac : `${mac} (${notANode(named.vendor)})`;
}

/** whoText is how a sentence names a responder: its node, or its MAC and what it is ("… (not a cluster node, …)"). */
export function whoText(r: NamedMac): string {
  return r.node ?? macText(r.mac, r);
}

/**
 * holders lists who holds an IP, as the IPs list shows it: the responders answering now, and each host that is no node
 * while the IP's address conflict holds. Such a host may answer only clients outside the cluster, by unicast, which no
 * agent sees: whohas hears it at its probes alone (one request an interval), so it is answering "now" for a few
 * seconds of each interval, yet holds the address all along.
 */
export function holders<R extends { readonly node: string | null; readonly answering: boolean }>(
  responders: readonly R[],
  findings: readonly { readonly type: string }[],
): R[] {
  const conflict = findings.some((f) => f.type === "address-conflict");
  return responders.filter((r) => r.answering || (conflict && r.node === null));
}

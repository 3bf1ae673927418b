import Link from "next/link";
import { splitIpKey } from "@whohas/core/ip-key";

/** ipHref is the dashboard's page of an IP key (the address, with "@VLAN" when it was seen in a VLAN). */
export function ipHref(key: string): string {
  return `/ips/${encodeURIComponent(key)}`;
}

/** IpName shows an IP key as a person reads it: the address, and its VLAN beside it when it was seen tagged. */
export function IpName({ ipKey }: { ipKey: string }) {
  const { ip, vlan } = splitIpKey(ipKey);
  return (
    <>
      {ip}
      {vlan === null ? null : (
        <span className="chip vlan" data-testid="vlan" title={`seen inside 802.1Q VLAN ${vlan}`}>
          VLAN {vlan}
        </span>
      )}
    </>
  );
}

/** IpLink links an IP key to its page. */
export function IpLink({ ipKey, className }: { ipKey: string; className?: string }) {
  return (
    <Link href={ipHref(ipKey)} className={className}>
      <IpName ipKey={ipKey} />
    </Link>
  );
}

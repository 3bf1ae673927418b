/**
 * The kernel's ARP behaviour per interface. Linux takes the larger of `all` and the interface's own value for both
 * arp_ignore and arp_announce (IN_DEV_ARP_IGNORE / IN_DEV_ARP_ANNOUNCE in include/linux/inetdevice.h), so
 * kube-proxy's strictARP, which sets only `all`, covers every interface.
 */
export function effectiveArpSetting(all: number, iface: number): number {
  return Math.max(all, iface);
}

/**
 * STRICT_ARP_IGNORE / STRICT_ARP_ANNOUNCE are what kube-proxy's IPVS proxier sets with strictARP true: answer only
 * for addresses on the receiving interface (1), and announce from the best local address (2).
 */
export const STRICT_ARP_IGNORE = 1;
export const STRICT_ARP_ANNOUNCE = 2;

/** isStrict tells whether an interface's effective settings stop it answering for addresses held on kube-ipvs0. */
export function isStrict(effectiveIgnore: number, effectiveAnnounce: number): boolean {
  return effectiveIgnore >= STRICT_ARP_IGNORE && effectiveAnnounce >= STRICT_ARP_ANNOUNCE;
}

/**
 * impliedProxyMode reads kube-proxy's mode off the node: IPVS mode keeps every Service IP on the kube-ipvs0 device;
 * iptables and nftables modes create no such device.
 */
export function impliedProxyMode(kubeIpvs0Present: boolean): "ipvs" | "not-ipvs" {
  return kubeIpvs0Present ? "ipvs" : "not-ipvs";
}

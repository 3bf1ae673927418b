/** USAGE is what `whohas --help` prints: the commands, one line each. */
export const USAGE = `Usage: whohas <command> [options]

Commands:
  agent               capture ARP/NDP on this node and stream it to the whohas hub (run by the DaemonSet)
  analyze             report who answers for which IP, per address and VLAN, in pcap / pcapng captures
  probe IP[@VLAN]     count the MACs answering each request for an IPv4 or IPv6 address: broadcast ARP, or an NS
                      to its solicited-node multicast address
  announce IP[@VLAN]  send MetalLB's gratuitous announcements for an IP from this node: ARP, or for IPv6 its
                      unsolicited NA burst from the interface's link-local address

IP@VLAN (192.0.2.10@30, 2001:db8::10@30) acts inside that 802.1Q VLAN, from this node's VLAN device with that id.
Run 'whohas <command> --help' for a command's options. 'whohas --version' prints the version.
`;

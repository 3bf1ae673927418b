// Ethernet II constants (IEEE 802.3, 802.1Q, 802.1ad). The decoders are in link.ts, with the cooked headers.

/** ETHERNET_HEADER_LEN is destination (6) + source (6) + EtherType (2). */
export const ETHERNET_HEADER_LEN = 14;
/** VLAN_TAG_LEN is one 802.1Q / 802.1ad tag: TPID (2) + TCI (2). */
export const VLAN_TAG_LEN = 4;
/** MAX_VLAN_TAGS bounds tag stacking; real networks use one (802.1Q) or two (802.1ad Q-in-Q). */
export const MAX_VLAN_TAGS = 4;

export const ETHERTYPE_IPV4 = 0x0800;
export const ETHERTYPE_ARP = 0x0806;
export const ETHERTYPE_IPV6 = 0x86dd;
export const TPID_8021Q = 0x8100;
export const TPID_8021AD = 0x88a8;
/** TPID_QINQ_LEGACY is the pre-standard Q-in-Q TPID still emitted by some switches. */
export const TPID_QINQ_LEGACY = 0x9100;

/*
 * arp-count: the reference for whohas analyze's counting work, in C with libpcap. It reads a capture file and counts,
 * per IP, the ARP requests for it and the replies per sender MAC, then prints one line per IP with its responders.
 * No joining of requests and replies, no verdicts: the floor of what reading and counting the same frames costs.
 *
 *   cc -O2 -o arp-count arp-count.c -lpcap && ./arp-count FILE
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS (1u << 20) /* open addressing: (ip, mac, op) keys; far more than any bench capture holds */

struct slot {
  uint64_t key; /* ip << 16 ^ mac... 0 = empty */
  uint32_t ip;
  uint8_t mac[6];
  uint16_t op;
  uint64_t count;
};

static struct slot *table;
static uint64_t frames, arp;

static uint64_t hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

static void count(uint32_t ip, const uint8_t *mac, uint16_t op) {
  uint64_t m = 0;
  for (int i = 0; i < 6; i++) m = (m << 8) | mac[i];
  uint64_t key = ((uint64_t)ip << 32) ^ (m << 2) ^ op ^ 1;
  for (uint64_t i = hash(key) & (SLOTS - 1);; i = (i + 1) & (SLOTS - 1)) {
    struct slot *s = &table[i];
    if (s->key == key && s->ip == ip && memcmp(s->mac, mac, 6) == 0 && s->op == op) {
      s->count++;
      return;
    }
    if (s->key == 0) {
      s->key = key;
      s->ip = ip;
      memcpy(s->mac, mac, 6);
      s->op = op;
      s->count = 1;
      return;
    }
  }
}

static void frame(u_char *user, const struct pcap_pkthdr *h, const u_char *p) {
  (void)user;
  frames++;
  if (h->caplen < 42) return;
  size_t off = 12;
  uint16_t type = (uint16_t)(p[off] << 8 | p[off + 1]);
  if (type == 0x8100) {
    off += 4;
    if (h->caplen < off + 30) return;
    type = (uint16_t)(p[off] << 8 | p[off + 1]);
  }
  if (type != 0x0806) return;
  const u_char *a = p + off + 2;
  if (a[4] != 6 || a[5] != 4) return;
  arp++;
  uint16_t op = (uint16_t)(a[6] << 8 | a[7]);
  uint32_t spa = (uint32_t)a[14] << 24 | (uint32_t)a[15] << 16 | (uint32_t)a[16] << 8 | a[17];
  uint32_t tpa = (uint32_t)a[24] << 24 | (uint32_t)a[25] << 16 | (uint32_t)a[26] << 8 | a[27];
  /* A request counts for the IP asked for; a reply for the IP it claims, per sender MAC. */
  if (op == 1) count(tpa, a + 8, 1);
  else if (op == 2) count(spa, a + 8, 2);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: arp-count FILE\n");
    return 2;
  }
  char err[PCAP_ERRBUF_SIZE];
  pcap_t *pc = pcap_open_offline(argv[1], err);
  if (pc == NULL) {
    fprintf(stderr, "arp-count: %s\n", err);
    return 1;
  }
  table = calloc(SLOTS, sizeof *table);
  if (table == NULL) return 1;
  if (pcap_loop(pc, -1, frame, NULL) == -1) {
    fprintf(stderr, "arp-count: %s\n", pcap_geterr(pc));
    return 1;
  }
  uint64_t ips = 0, replies = 0;
  for (uint64_t i = 0; i < SLOTS; i++) {
    struct slot *s = &table[i];
    if (s->key == 0) continue;
    if (s->op == 2) replies += s->count;
    printf("%u.%u.%u.%u %02x:%02x:%02x:%02x:%02x:%02x op%u %llu\n", s->ip >> 24, s->ip >> 16 & 255, s->ip >> 8 & 255, s->ip & 255, s->mac[0],
           s->mac[1], s->mac[2], s->mac[3], s->mac[4], s->mac[5], s->op, (unsigned long long)s->count);
    ips++;
  }
  fprintf(stderr, "arp-count: %llu frames, %llu ARP, %llu keys, %llu replies\n", (unsigned long long)frames, (unsigned long long)arp,
          (unsigned long long)ips, (unsigned long long)replies);
  pcap_close(pc);
  return 0;
}

// Messages as an agent sends them, made in bulk: what the hub's benchmarks and the lab's load tests feed it.

/** Where the node sending a message stands among the nodes that see the same requests (one L2 segment). */
export interface SegmentPlace {
  /** Whether this node answers the `i`th IP of the list (MetalLB elects one node of the segment per IP). */
  readonly answers: (i: number) => boolean;
  /** When the request at position `cursor` was on the wire: every node of the segment saw it then. */
  readonly askedAt: (cursor: number) => number;
}

/** ALONE: a node alone on its segment answers every IP it sees, and its requests are timed as it sends them. */
const ALONE = (now: number): SegmentPlace => ({ answers: () => true, askedAt: () => now });

/**
 * observationsJson is one observations message as an agent sends it: `n` aggregates from position `cursor` on, a
 * client's request and the node's (`mac`) reply for each IP in turn, round-robin, with the request report an agent
 * sends for each request it saw (the reply, when this node answers the IP, 0.3 ms after the request). Returns the
 * text, how many aggregates it holds (a node that does not answer an IP sends only its request) and how many request
 * reports.
 */
export function observationsMessage(
  ips: readonly string[],
  mac: string,
  cursor: number,
  n: number,
  now: number,
  place: SegmentPlace = ALONE(now),
): { text: string; entries: number; reports: number } {
  const parts: string[] = [];
  const requests: string[] = [];
  for (let k = 0; k < n; k++, cursor++) {
    const i = Math.floor(cursor / 2) % ips.length;
    const ip = ips[i] ?? "";
    const at = place.askedAt(cursor - (cursor & 1));
    if ((cursor & 1) === 0) {
      parts.push(
        `{"ip":"${ip}","mac":"02:00:5e:00:00:01","kind":"request","iface":"eth0","count":1,"firstSeen":${at},"lastSeen":${at},"targetMac":null,"ethernetMismatch":0,"ethSrc":null}`,
      );
      continue;
    }
    if (!place.answers(i)) {
      requests.push(`{"ip":"${ip}","asker":"192.0.2.1","iface":"eth0","times":[${at}],"replies":[]}`);
      continue;
    }
    parts.push(
      `{"ip":"${ip}","mac":"${mac}","kind":"reply","iface":"eth0","count":1,"firstSeen":${now},"lastSeen":${now},"targetMac":null,"ethernetMismatch":0,"ethSrc":null}`,
    );
    requests.push(`{"ip":"${ip}","asker":"192.0.2.1","iface":"eth0","times":[${at}],"replies":[[0,"${mac}",0.3]]}`);
  }
  const text = `{"v":2,"type":"observations","dropped":0,"entries":[${parts.join(",")}],"requests":[${requests.join(",")}]}`;
  return { text, entries: parts.length, reports: requests.length };
}

/** observationsJson is observationsMessage's text for a node alone on its segment. */
export function observationsJson(ips: readonly string[], mac: string, cursor: number, n: number, now: number): string {
  return observationsMessage(ips, mac, cursor, n, now).text;
}

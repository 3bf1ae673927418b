// Messages as an agent sends them, made in bulk: what the hub's benchmarks and the lab's load tests feed it.

/**
 * observationsJson is one observations message as an agent sends it: `n` aggregates from position `cursor` on, a
 * client's request and the node's (`mac`) reply for each IP in turn, round-robin, with the request report an agent
 * sends for each request it saw answered (the reply 0.3 ms after the request).
 */
export function observationsJson(ips: readonly string[], mac: string, cursor: number, n: number, now: number): string {
  const parts: string[] = [];
  const requests: string[] = [];
  for (let k = 0; k < n; k++, cursor++) {
    const ip = ips[Math.floor(cursor / 2) % ips.length] ?? "";
    const reply = (cursor & 1) === 1;
    parts.push(
      `{"ip":"${ip}","mac":"${reply ? mac : "02:00:5e:00:00:01"}","kind":"${reply ? "reply" : "request"}","iface":"eth0","count":1,"firstSeen":${now},"lastSeen":${now},"targetMac":null,"ethernetMismatch":0,"ethSrc":null}`,
    );
    if (reply) requests.push(`{"ip":"${ip}","asker":"192.0.2.1","iface":"eth0","times":[${now}],"replies":[[0,"${mac}",0.3]]}`);
  }
  return `{"v":2,"type":"observations","dropped":0,"entries":[${parts.join(",")}],"requests":[${requests.join(",")}]}`;
}

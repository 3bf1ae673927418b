import { mkdirSync, writeFileSync } from "node:fs";
import { collectGarbage, requireRoot, startStack } from "@whohas/lab";

/** STATE_DIR holds each role's signed-in browser state (cookies), made here once through the hub's sign-in. */
export const STATE_DIR = "test-results/.auth";

/** signIn posts the sign-in form as a browser would and saves the session cookie as Playwright storage state. */
async function signIn(url: string, user: { name: string; password: string }, file: string): Promise<void> {
  const res = await fetch(`${url}/api/auth/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ username: user.name, password: user.password }),
  });
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const i = cookie.indexOf("=");
  if (res.status !== 303 || i < 0) throw new Error(`sign-in as ${user.name} failed: HTTP ${res.status}`);
  const { hostname } = new URL(url);
  const state = {
    cookies: [
      {
        name: cookie.slice(0, i),
        value: cookie.slice(i + 1),
        domain: hostname,
        path: "/",
        expires: -1,
        httpOnly: true,
        secure: false,
        sameSite: "Lax",
      },
    ],
    origins: [],
  };
  writeFileSync(file, JSON.stringify(state));
}

/** VLAN_IP: an address the lab's client asks for inside VLAN 30 (node-1 answers there). */
const VLAN_IP = "198.18.0.230@30";
/** The same address on VLAN 40, where node-2 answers: a row of its own. */
const VLAN_IP_40 = "198.18.0.230@40";
/** An IPv6 address on VLAN 40, answered by node-3. */
const VLAN_IP6 = "2001:2::230@40";
/**
 * STRANGER: a host that is no node (an Intel MAC, a registered prefix) holding a LoadBalancer IP of its own Service
 * (demo/spare-0), which no node answers for: an address conflict, heard by the hub's background probe, that leaves
 * what every other test counts (responders, incidents) as it was.
 */
const STRANGER = { ip: "198.18.0.250", mac: "00:1b:21:00:00:2a" };

/** globalSetup starts the whole stack once; the returned function tears it down, also when tests fail. */
export default async function globalSetup(): Promise<() => Promise<void>> {
  await requireRoot();
  await collectGarbage();
  // Probe is shortened from its 60 s (a test setting of the hub: actions.probeDuration).
  // The test's webhook receiver listens on loopback, which receivers may use only when named in allowHosts.
  const stack = await startStack({
    nodes: 3,
    vips: 2,
    kube: true,
    cluster: true,
    probeDuration: "6s",
    hubConfig: { alerting: { allowHosts: ["127.0.0.1"] } },
    ipv6: true,
    vlanVips: [VLAN_IP, VLAN_IP_40, VLAN_IP6],
    spareVips: [STRANGER.ip],
    // The product's default, as the demo runs it.
    backgroundProbe: "30s",
  });
  // node-1 answers for the address on VLAN 30, node-2 for the same address on VLAN 40, node-3 for the IPv6 address on
  // VLAN 40 (each beside the Service IPs it was elected for).
  const elected = (node: string) => [...stack.owners].filter(([, o]) => o === node).map(([ip]) => ip);
  stack.own("node-1", [...elected("node-1"), VLAN_IP]);
  stack.own("node-2", [...elected("node-2"), VLAN_IP_40]);
  stack.own("node-3", [...elected("node-3"), VLAN_IP6]);
  await stack.lab.addStranger(STRANGER.mac, [STRANGER.ip]);
  mkdirSync(STATE_DIR, { recursive: true });
  for (const role of ["viewer", "operator", "admin"] as const) await signIn(stack.url, stack.users[role], `${STATE_DIR}/${role}.json`);
  process.env.WHOHAS_E2E_URL = stack.url;
  process.env.WHOHAS_E2E_KUBECONFIG = `${stack.lab.names.stateDir}/kubeconfig`;
  process.env.WHOHAS_E2E_USERS = JSON.stringify(stack.users);
  process.env.WHOHAS_E2E_NODES = JSON.stringify(stack.lab.nodes.map((n) => ({ name: n.name, mac: n.mac })));
  process.env.WHOHAS_E2E_VIPS = JSON.stringify(stack.lab.vips);
  process.env.WHOHAS_E2E_VIPS6 = JSON.stringify(stack.lab.vips6.map((ip) => ({ ip, owner: stack.owners.get(ip) ?? "" })));
  process.env.WHOHAS_E2E_VLAN_IP = VLAN_IP;
  process.env.WHOHAS_E2E_VLAN_IP_40 = VLAN_IP_40;
  process.env.WHOHAS_E2E_VLAN_IP6 = VLAN_IP6;
  process.env.WHOHAS_E2E_STRANGER = JSON.stringify(STRANGER);
  return () => stack.stop();
}

import { expect, test, type Locator, type Page } from "@playwright/test";
import { execFileSync } from "node:child_process";
import { columns, shot, shots } from "./shots.js";

const url = process.env.WHOHAS_E2E_URL ?? "";
const nodes = JSON.parse(process.env.WHOHAS_E2E_NODES ?? "[]") as { name: string; mac: string }[];
const vips = JSON.parse(process.env.WHOHAS_E2E_VIPS ?? "[]") as string[];
const vip0 = vips[0] ?? "";
const vip1 = vips[1] ?? "";
const vips6 = JSON.parse(process.env.WHOHAS_E2E_VIPS6 ?? "[]") as { ip: string; owner: string }[];
const vlanIp = process.env.WHOHAS_E2E_VLAN_IP ?? "";
const vlanIp40 = process.env.WHOHAS_E2E_VLAN_IP_40 ?? "";
const vlanIp6 = process.env.WHOHAS_E2E_VLAN_IP6 ?? "";
/** A host that is no node, holding a LoadBalancer IP that no node answers for (global-setup). */
const stranger = JSON.parse(process.env.WHOHAS_E2E_STRANGER ?? "{}") as { ip: string; mac: string };
/** downloaded clicks a download link and saves what the browser received; returns its suggested name and path. */
async function downloaded(page: Page, link: Locator) {
  const [d] = await Promise.all([page.waitForEvent("download"), link.click()]);
  const path = `test-results/downloads/${d.suggestedFilename()}`;
  await d.saveAs(path);
  return { name: d.suggestedFilename(), path };
}
/** repliers are the MACs a capture file shows answering ARP for `ip`, as tshark reads the file. */
function repliers(path: string, ip: string): string[] {
  const out = execFileSync(
    "tshark",
    ["-r", path, "-Y", `arp.opcode == 2 && arp.src.proto_ipv4 == ${ip}`, "-T", "fields", "-e", "arp.src.hw_mac"],
    {
      encoding: "utf8",
    },
  );
  return [
    ...new Set(
      out
        .trim()
        .split("\n")
        .filter((l) => l !== ""),
    ),
  ].sort();
}

test("the Overview turns red with three responders and shows every node's ARP behaviour", async ({ page }) => {
  await page.goto(url);
  await expect(page.getByTestId("banner")).toContainText("answered by several nodes");
  await expect(page.getByTestId("banner")).toContainText("strictARP: false");
  await expect(page.getByTestId("count-multi")).toContainText("2");
  await expect(page.getByTestId("count-agents")).toContainText("3");
  await expect(page.getByTestId("cluster")).toContainText("kube-proxy mode ipvs, strictARP false (configured), MetalLB installed");
  await expect(page.getByTestId("strictarp-effective")).toHaveAttribute("data-verdict", "exposed");
  const rows = page.locator('[data-testid="strictarp-nodes"] tbody tr');
  await expect(rows).toHaveCount(3);
  for (const n of nodes)
    await expect(page.locator(`[data-testid="strictarp-nodes"] tr[data-node="${n.name}"]`)).toContainText("any local address");
  await expect(page.getByTestId("problem-ips")).toContainText(vip0);
  await shots(page, "overview", [
    page.getByTestId("banner"),
    page.getByTestId("count-multi"),
    page.getByTestId("count-agents"),
    ...columns(page.getByTestId("strictarp-nodes"), ["Node", "Answers ARP", "Drift from the configuration"]),
    page.getByTestId("problem-ips"),
  ]);
});

test("the IPs page lists the responders, filters and sorts with the state in the URL", async ({ page }) => {
  // The first screen of rows comes in the HTML: the browser must take it over without a hydration mismatch.
  const errors: string[] = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${url}/ips`);
  const row = page.locator(`[data-ip="${vip0}"]`);
  await expect(row).toHaveAttribute("data-state", "multi-responder");
  for (const n of nodes) await expect(row.locator(`[data-testid="responder"][data-mac="${n.mac}"]`)).toHaveAttribute("data-node", n.name);
  await expect(row.getByTestId("services")).toHaveText("demo/web-0");
  await expect(row.getByTestId("findings")).toContainText("multi-responder");
  // The two responders that are not the expected owner are marked wrong.
  const owner = await row.getByTestId("owner").getAttribute("data-owner");
  await expect(row.locator('[data-testid="responder"].wrong')).toHaveCount(nodes.filter((n) => n.name !== owner).length);
  expect(errors.filter((e) => /hydrat|did not match|error #(418|423|425)/i.test(e))).toEqual([]);
  await shots(
    page,
    "ips",
    [
      ...columns(page.getByTestId("ips"), ["IP", "State", "Answering", "Findings", "Requests"]),
      row.getByRole("link"),
      row.getByTestId("state"),
      row.getByTestId("findings"),
    ],
    // On a desktop monitor every column shows, the secondary ones folded at 1280 px included.
    columns(page.getByTestId("ips"), ["Service", "ETP", "Expected owner", "Usually first", "Announced"]),
  );

  await page.getByTestId("search").fill(vip1);
  await expect(page).toHaveURL(new RegExp(`q=${vip1.replaceAll(".", "\\.")}`));
  await expect(page.locator(`[data-ip="${vip0}"]`)).toHaveCount(0);
  await expect(page.locator(`[data-ip="${vip1}"]`)).toHaveCount(1);
  // A shared link opens the same filtered view.
  const shared = page.url();
  const other = await page.context().newPage();
  await other.goto(shared);
  await expect(other.getByTestId("search")).toHaveValue(vip1);
  await expect(other.getByTestId("row-count")).toContainText("1 of");
  await other.close();
  await page.getByTestId("search").fill("");
  await page.getByTestId("filter-finding").selectOption("silent-drop");
  await expect(page.locator(`[data-ip="${vip1}"]`)).toHaveCount(1);
  await expect(page.locator(`[data-ip="${vip0}"]`)).toHaveCount(0);
});

test("the IPs table keeps each IP, its state, who answers and what is wrong whole at 1280 px, and every column at 1920", async ({
  page,
}) => {
  for (const width of [1280, 1920]) {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${url}/ips`);
    const row = page.locator(`[data-testid="ips"] [data-ip="${vip1}"]`);
    // The ETP Local VIP holds the most: several responders, the nodes that are not its owner, the silent drop.
    await expect(row.getByTestId("findings").locator(".chip")).toHaveCount(3);
    await expect(row.getByTestId("responder")).toHaveCount(3);
    const whole = [
      row.locator('[role="cell"]').first(),
      row.getByTestId("state"),
      row.getByTestId("findings"),
      row.getByTestId("requests"),
    ];
    const answering = row.getByTestId("responder").first().locator("xpath=..");
    for (const cell of [...whole, answering]) {
      const cut = await cell.evaluate((el) => el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1);
      expect(cut, `${await cell.innerText()} is cut at ${width} px`).toBe(false);
    }
    // The last column is in the window, not scrolled off its right edge, its header whole.
    const last = await row.getByTestId("requests").boundingBox();
    expect((last?.x ?? Infinity) + (last?.width ?? 0)).toBeLessThanOrEqual(width);
    const header = page.locator('[data-testid="ips"] [role="columnheader"]', { hasText: "Requests" });
    expect(await header.evaluate((el) => el.scrollWidth > el.clientWidth + 1)).toBe(false);
    // The secondary columns fold under 1440 px (the IP page has them) and show above.
    const secondary = page.locator('[data-testid="ips"] [role="columnheader"]', { hasText: "Usually first" });
    if (width < 1440) await expect(secondary).toBeHidden();
    else await expect(secondary).toBeVisible();
  }
});

test("the IP detail shows the three responders, the timeline, the silent drop and the client-side fix", async ({ page }) => {
  await page.goto(`${url}/ips/${vip1}`);
  await expect(page.getByTestId("ip-state")).toHaveAttribute("data-state", "multi-responder");
  await expect(page.locator('[data-testid="responder"][data-answering="true"]')).toHaveCount(3);
  await expect(page.getByTestId("silent-drop")).toContainText("node-1, node-2");
  await expect(page.getByTestId("endpoints")).toContainText("node-3");
  await expect(page.getByTestId("client-fix")).toContainText(`ip neigh flush to ${vip1}`);
  // The chart has one replies series per node, drawn.
  const chart = page.getByTestId("timeline");
  for (const n of nodes) await expect(chart).toHaveAttribute("data-series", new RegExp(`${n.name} replies`));
  // One line per series drawn: the three nodes' replies, and the owner's announcements (its speaker announced the IP).
  const series = ((await chart.getAttribute("data-series")) ?? "").split("|");
  expect(series.filter((k) => k.endsWith(" replies"))).toHaveLength(3);
  await expect(chart.locator(".recharts-line")).toHaveCount(series.length);
  // Small multiples: one chart per answering node, each with its own line, the owner marked, and the multi-responder
  // incident drawn as a marker on every one of them.
  const lanes = chart.getByTestId("timeline-node");
  await expect(lanes).toHaveCount(nodes.length);
  for (const n of nodes) {
    const lane = chart.locator(`[data-testid="timeline-node"][data-node="${n.name}"]`);
    await expect(lane).toHaveAttribute("data-mac", n.mac);
    // recharts draws a line's curve and dots in its z-index layers, outside the .recharts-line group.
    await expect(lane.locator(".recharts-line-curve, .recharts-line-dot").first()).toBeVisible();
    await expect(lane.locator('[data-testid="timeline-marker"][data-kind="incident"]').first()).toContainText("multi-responder");
  }
  await expect(chart.locator('[data-testid="timeline-node"][data-owner="true"]')).toHaveCount(1);
  await expect(chart.locator('[data-testid="timeline-node"][data-owner="true"]')).toContainText("owner");
  // Ticks on one chart never read the same.
  const ticks = (await lanes.first().locator(".recharts-cartesian-axis-tick-value").allTextContents()).filter((t) => /\d:\d\d/.test(t));
  expect(ticks.length).toBeGreaterThan(1);
  expect(new Set(ticks).size).toBe(ticks.length);
  await expect(page.getByTestId("ip-incidents")).toContainText("multi-responder");
  await shots(page, "ip-detail", [
    page.getByTestId("ip-state"),
    page.getByTestId("probe"),
    page.getByTestId("reannounce"),
    ...columns(page.getByTestId("responders"), ["Node", "MAC", "Answering now", "Replies", "Last seen"]),
    chart,
  ]);
  for (const width of [1280, 1920]) {
    await page.setViewportSize({ width, height: 1000 });
    await chart.scrollIntoViewIfNeeded();
    await chart.screenshot({ path: `test-results/pages/ip-timeline-${width}.png` });
  }
  await page.getByRole("button", { name: "switch between light and dark theme" }).click();
  await chart.screenshot({ path: "test-results/pages/ip-timeline-toggled-theme.png" });
});

test("a host that is no node holding a LoadBalancer IP: an address conflict, named by its vendor everywhere", async ({ page }) => {
  // The hub's background probe (one request every 30 s) hears it; it is an address conflict once it has answered
  // probes for 20 s: about a minute after the lab started at worst, long past when this file runs after the others.
  test.setTimeout(180_000);
  const wait = { timeout: 120_000 };
  const isIt = `(not a cluster node, Intel Corporate)`;
  await page.goto(`${url}/incidents`);
  const incident = page
    .locator('[data-testid="incidents-open"] tr[data-incident]')
    .filter({ has: page.getByRole("link", { name: stranger.ip, exact: true }) });
  await expect(incident).toHaveAttribute("data-type", "address-conflict", wait);
  await expect(incident).toHaveCount(1);
  await expect(incident).toContainText(`${stranger.mac} (Intel Corporate), not a node of the cluster`);

  await page.goto(`${url}/ips`);
  const row = page.locator(`[data-testid="ips"] [data-ip="${stranger.ip}"]`);
  await expect(row.getByTestId("services")).toHaveText("demo/spare-0");
  await expect(row.getByTestId("findings")).toContainText("address-conflict");
  const chip = row.locator(`[data-testid="responder"][data-mac="${stranger.mac}"]`);
  await expect(chip).toHaveText("Intel Corporate (not a node)");
  await expect(chip).toHaveAttribute("data-node", "");

  await row.getByRole("link").click();
  await expect(page).toHaveURL(new RegExp(`/ips/${stranger.ip.replaceAll(".", "\\.")}$`));
  const responder = page.locator(`[data-testid="responders"] [data-testid="responder"][data-mac="${stranger.mac}"]`);
  await expect(responder.getByTestId("stranger")).toHaveText("not a cluster node");
  await expect(responder.getByTestId("vendor")).toHaveText("Intel Corporate");
  // Only the probe's node asks for it, and only the stranger answers: the probe's line names it by its vendor.
  const background = page.getByTestId("background-probe");
  await expect(background).toContainText(`answered by ${stranger.mac} ${isIt}`, { timeout: 45_000 });
  await expect(page.getByTestId("ip-incidents")).toContainText("address-conflict");
  await shots(page, "ip-detail-stranger", [
    page.getByTestId("ip-state"),
    ...columns(page.getByTestId("responders"), ["Node", "MAC", "Answering now", "Replies", "Last seen"]),
    responder.getByTestId("vendor"),
    background,
  ]);

  // Its incident: the finding's MACs and the evidence name it too.
  await page.goto(`${url}/incidents`);
  await incident.getByRole("link", { name: /^#\d+$/ }).click();
  await expect(page.locator('[data-testid="incident-facets"] tr[data-finding="address-conflict"] [data-testid="facet-macs"]')).toHaveText(
    `${stranger.mac} ${isIt}`,
  );
  await expect(page.getByTestId("evidence")).toContainText(`${stranger.mac} ${isIt}`);
  await shot(page, "incident-stranger");
});

test("an IPv6 Service IP and addresses on VLANs: their rows, and the IPv6 IPs' pages with their one responder", async ({ page }) => {
  const v6 = vips6[0] ?? { ip: "", owner: "" };
  const owner = nodes.find((n) => n.name === v6.owner);
  await page.goto(`${url}/ips`);
  const row6 = page.locator(`[data-ip="${v6.ip}"]`);
  await expect(row6).toHaveAttribute("data-state", "single");
  await expect(row6.getByTestId("services")).toHaveText("demo/web6-0");
  await expect(row6.locator('[data-testid="responder"]')).toHaveAttribute("data-node", v6.owner);
  // The address on VLAN 30: its own row, the VLAN beside the address, answered by node-1.
  const vlanRow = page.locator(`[data-ip="${vlanIp}"]`);
  await expect(vlanRow).toContainText("198.18.0.230");
  await expect(vlanRow.getByTestId("vlan")).toHaveText("VLAN 30");
  await expect(vlanRow.locator('[data-testid="responder"]')).toHaveAttribute("data-node", "node-1");
  // The same address on VLAN 40 is another row, answered by another node.
  const vlanRow40 = page.locator(`[data-ip="${vlanIp40}"]`);
  await expect(vlanRow40).toContainText("198.18.0.230");
  await expect(vlanRow40.getByTestId("vlan")).toHaveText("VLAN 40");
  await expect(vlanRow40.locator('[data-testid="responder"]')).toHaveAttribute("data-node", "node-2");
  // An IPv6 address on VLAN 40, written compressed.
  const row6vlan = page.locator(`[data-ip="${vlanIp6}"]`);
  await expect(row6vlan).toContainText("2001:2::230");
  await expect(row6vlan.getByTestId("vlan")).toHaveText("VLAN 40");
  await shot(page, "ips-dual-stack");

  await vlanRow.getByRole("link", { name: /198\.18\.0\.230/ }).click();
  await expect(page).toHaveURL(new RegExp(`/ips/${encodeURIComponent(vlanIp)}$`));
  await expect(page.getByRole("heading", { level: 1 })).toContainText("198.18.0.230");
  await expect(page.getByRole("heading", { level: 1 }).getByTestId("vlan")).toHaveText("VLAN 30");

  await page.goto(`${url}/ips/${v6.ip}`);
  await expect(page.getByTestId("ip-state")).toHaveAttribute("data-state", "single");
  await expect(page.locator('[data-testid="responder"][data-answering="true"]')).toHaveCount(1);
  await expect(page.locator(`[data-testid="responder"][data-answering="true"][data-node="${v6.owner}"]`)).toContainText(owner?.mac ?? "?");
  await expect(page.getByTestId("client-fix")).toContainText(`ip neigh flush to ${v6.ip}`);
  // The hub's background probe asks for it from another node every 30 s: that node hears the owner's answer.
  const background = page.getByTestId("background-probe");
  await expect(background).toHaveAttribute("data-state", "ok", { timeout: 45_000 });
  await expect(background).toContainText(`answered by ${v6.owner}`, { timeout: 45_000 });
  await expect(background).not.toContainText(`asked from ${v6.owner}`);
  await shot(page, "ip-detail-ipv6");

  // The IPv6 address on VLAN 40: its page names the VLAN and its one responder, node-3, with its MAC.
  await page.goto(`${url}/ips/${encodeURIComponent(vlanIp6)}`);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("2001:2::230");
  await expect(page.getByRole("heading", { level: 1 }).getByTestId("vlan")).toHaveText("VLAN 40");
  await expect(page.getByTestId("ip-state")).toHaveAttribute("data-state", "single");
  const node3 = nodes.find((n) => n.name === "node-3");
  await expect(page.locator('[data-testid="responder"][data-answering="true"]')).toHaveCount(1);
  await expect(page.locator('[data-testid="responder"][data-answering="true"][data-node="node-3"]')).toContainText(node3?.mac ?? "?");
  await shot(page, "ip-detail-ipv6-vlan");
});

test("the Nodes page shows every agent online with its ARP settings", async ({ page }) => {
  await page.goto(`${url}/nodes`);
  for (const n of nodes) {
    const row = page.locator(`[data-testid="nodes"] tr[data-node="${n.name}"]`);
    await expect(row).toHaveAttribute("data-up", "true");
    await expect(row.locator('[data-iface="eth0"]')).toHaveAttribute("data-arp-ignore", "0");
    await expect(row.getByTestId("arp")).toContainText("any local address");
  }
  await shots(page, "nodes", columns(page.getByTestId("nodes"), ["Node", "Agent", "Version", "ARP", "Capture"]));
});

test("the Incidents page lists the open incidents and one opens with its evidence and timeline", async ({ page }) => {
  await page.goto(`${url}/incidents`);
  const open = page.getByTestId("incidents-open");
  await expect(open.locator('tr[data-type="multi-responder"]')).toHaveCount(2);
  // One incident per subject: a VIP's other findings (the nodes that are not its owner) are tags of its row.
  const subjects = await open.locator("tr[data-incident] td:nth-child(2)").allTextContents();
  expect(new Set(subjects).size).toBe(subjects.length);
  await expect(
    open.locator('tr[data-type="multi-responder"][data-findings~="wrong-owner"] [data-finding="wrong-owner"]').first(),
  ).toBeVisible();
  await shots(page, "incidents", [
    ...columns(open, ["#", "Subject", "Findings", "Detail", "Opened", "Resolved", "Acknowledged"]),
    open.locator("tr[data-incident] a").first(),
  ]);
  await open.locator('tr[data-type="multi-responder"][data-findings~="wrong-owner"] a').first().click();
  await expect(page.getByTestId("incident-state")).toHaveText("open");
  await expect(page.locator('[data-testid="incident-facets"] tr[data-finding="multi-responder"][data-holding="true"]')).toHaveCount(1);
  await expect(page.locator('[data-testid="incident-facets"] tr[data-finding="wrong-owner"]')).toHaveCount(1);
  await expect(page.getByTestId("evidence")).toContainText("Responders:");
  await expect(page.locator('[data-testid="incident-events"] li[data-kind="opened"]')).toHaveCount(1);
  // What happened: the opening first, both findings, in time order.
  const story = page.getByTestId("incident-events");
  await expect(story.locator("li").first()).toHaveAttribute("data-kind", "opened");
  await expect(story).toContainText("multi-responder");
  await expect(story).toContainText("wrong-owner");
  const times = await story.locator("time").evaluateAll((ts) => ts.map((t) => Date.parse(t.getAttribute("datetime") ?? "")));
  expect(times).toEqual([...times].sort((a, b) => a - b));
  // What to do now: the lab's kube-proxy runs IPVS without strictARP, so the first step is the Fix page, with the
  // ConfigMap check to copy.
  const steps = page.getByTestId("next-steps");
  await expect(steps.locator("li[data-step]").first()).toHaveAttribute("data-step", "strictarp");
  await expect(steps.getByTestId("step-link").first()).toHaveAttribute("href", "/fix");
  await expect(steps.getByTestId("command").first()).toContainText("kubectl -n kube-system get configmap kube-proxy");
  await shots(page, "incident", [
    page.getByTestId("incident-state"),
    ...columns(page.getByTestId("incident-facets"), ["Finding", "State", "MACs", "Detail"]),
    page.getByTestId("evidence"),
    page.getByTestId("download-capture"),
  ]);
  // The incident's frames, as the browser downloads them, read by tshark: every node's reply for the IP.
  const file = await downloaded(page, page.getByTestId("download-capture"));
  const named = /^whohas-(198\.18\.0\.\d+)-\d{8}T\d{6}Z-incident-\d+\.pcapng$/.exec(file.name);
  expect(named).not.toBeNull();
  expect(repliers(file.path, named?.[1] ?? "")).toEqual(nodes.map((n) => n.mac).sort());
  await expect(page.getByTestId("capture-summary")).toContainText(nodes[0]?.name ?? "");
  // The download is an action on the incident: the story says who took it.
  await expect(story.locator('li[data-kind="action"]').filter({ hasText: "capture downloaded" }).first()).toContainText("by ");
  await page.getByRole("button", { name: "switch between light and dark theme" }).click();
  await shot(page, "incident-toggled-theme");
});

test("the IP page downloads the last minute's frames every node holds about the IP", async ({ page }) => {
  await page.goto(`${url}/ips/${vip0}`);
  const file = await downloaded(page, page.getByTestId("download-ip-capture"));
  expect(file.name).toMatch(new RegExp(`^whohas-${vip0.replaceAll(".", "\\.")}-\\d{8}T\\d{6}Z-\\d{8}T\\d{6}Z\\.pcapng$`));
  expect(repliers(file.path, vip0)).toEqual(nodes.map((n) => n.mac).sort());
});

test("a second page sees the same live data without reloading", async ({ browser }) => {
  const a = await browser.newPage({ storageState: "test-results/.auth/viewer.json" });
  const b = await browser.newPage({ storageState: "test-results/.auth/viewer.json" });
  await Promise.all([a.goto(`${url}/ips`), b.goto(`${url}/ips`)]);
  const count = (p: Page) => p.locator(`[data-ip="${vip1}"]`).getByTestId("requests");
  await expect(count(a)).toContainText(/\d/);
  const first = Number((await count(b).innerText()).trim());
  // The client asks every second: the request count grows on both pages by push alone.
  await expect.poll(async () => Number((await count(b).innerText()).trim()), { timeout: 15_000 }).toBeGreaterThan(first + 2);
  await expect.poll(async () => Number((await count(a).innerText()).trim()), { timeout: 15_000 }).toBeGreaterThan(first + 2);
});

test("the light theme is remembered", async ({ page }) => {
  await page.goto(url);
  const html = page.locator("html");
  // The theme in force once the page runs (the system's, or the one remembered).
  await expect(html).toHaveAttribute("data-theme", /^(light|dark)$/);
  const before = (await html.getAttribute("data-theme")) ?? "";
  await page.getByRole("button", { name: "switch between light and dark theme" }).click();
  const flipped = before === "light" ? "dark" : "light";
  await expect(html).toHaveAttribute("data-theme", flipped);
  await page.reload();
  await expect(html).toHaveAttribute("data-theme", flipped);
});

test("every page runs under the Content-Security-Policy without a violation, and cannot be framed", async ({ page }) => {
  const violations: string[] = [];
  await page.exposeFunction("reportViolation", (v: string) => violations.push(v));
  await page.addInitScript(() => {
    document.addEventListener(
      "securitypolicyviolation",
      (e) => void (window as unknown as { reportViolation: (v: string) => void }).reportViolation(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  page.on("console", (m) => m.type() === "error" && /Content.Security.Policy/i.test(m.text()) && violations.push(m.text()));
  for (const path of ["/", "/ips", `/ips/${vip0}`, "/nodes", "/incidents", "/clusters", "/settings"]) {
    const res = await page.goto(`${url}${path}`);
    expect(res?.headers()["content-security-policy"]).toMatch(/'nonce-[^']+' 'strict-dynamic'.*frame-ancestors 'none'/);
    // The page's scripts ran under the policy: the top bar's effect sets the theme on <html>.
    await expect(page.locator("html")).toHaveAttribute("data-theme", /^(light|dark)$/);
  }
  expect(violations).toEqual([]);
  // Another site framing the dashboard (clickjacking the operators' buttons) gets an error page, not the dashboard.
  // setContent returns once the page and its frame have loaded (or failed to).
  await page.setContent(`<iframe id="f" src="${url}/ips" width="600" height="400"></iframe>`);
  const framed = page.frames().find((f) => f !== page.mainFrame());
  expect(framed).toBeDefined();
  expect(framed?.url()).toMatch(/^chrome-error:/);
  expect(await framed?.locator("body").innerText()).not.toContain("LoadBalancer IPs");
});

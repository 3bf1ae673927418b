import { expect, test } from "@playwright/test";

const url = process.env.WHOHAS_E2E_URL ?? "";
const nodes = JSON.parse(process.env.WHOHAS_E2E_NODES ?? "[]") as { name: string; mac: string }[];
const vips = JSON.parse(process.env.WHOHAS_E2E_VIPS ?? "[]") as string[];

test("the dashboard shows the three nodes answering for a VIP, live", async ({ page }) => {
  await page.goto(url);
  const row = page.locator(`tr[data-ip="${vips[0]}"]`);
  await expect(row).toHaveAttribute("data-state", "multi-responder");
  for (const n of nodes) {
    await expect(row.locator(`[data-testid="responder"][data-mac="${n.mac}"]`)).toHaveAttribute("data-node", n.name);
  }
  await expect(row.locator('[data-testid="responder"][data-answering="true"]')).toHaveCount(3);
  await expect(page.getByTestId("banner")).toContainText("answered by several nodes");
  // The cluster side: the Service behind the VIP and the node MetalLB's election gives it.
  await expect(row.getByTestId("services")).toHaveText("demo/web-0");
  await expect(row.getByTestId("owner")).toHaveAttribute("data-source", "computed");
  await expect(page.getByTestId("cluster")).toContainText("kube-proxy mode ipvs, strictARP false (configured), MetalLB installed");
  // The ETP Local VIP: the two nodes without an endpoint answer too, and their traffic would be dropped.
  await expect(page.locator(`tr[data-ip="${vips[1]}"]`).getByTestId("silent-drop")).toContainText("silent drop: node-1, node-2");
  await page.screenshot({ path: "test-results/dashboard.png", fullPage: true });
});

test("a second page sees the same live data without reloading", async ({ browser }) => {
  const a = await browser.newPage();
  const b = await browser.newPage();
  await Promise.all([a.goto(url), b.goto(url)]);
  const rowOf = (p: typeof a) => p.locator(`tr[data-ip="${vips[1]}"]`).getByTestId("requests");
  await expect(rowOf(a)).toContainText(/\d/);
  const first = Number(/^\d+/.exec((await rowOf(b).innerText()).trim())?.[0] ?? "0");
  // The client asks every second: the request count grows on both pages by push alone.
  await expect.poll(async () => Number(/^\d+/.exec((await rowOf(b).innerText()).trim())?.[0] ?? "0"), { timeout: 15_000 }).toBeGreaterThan(first + 2);
  await expect(a.locator('[data-testid="agents"] tr[data-node]')).toHaveCount(3);
});

import { expect, test } from "@playwright/test";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { columns, shot, shots } from "./shots.js";

const url = process.env.WHOHAS_E2E_URL ?? "";
const users = JSON.parse(process.env.WHOHAS_E2E_USERS ?? "{}") as Record<
  "viewer" | "operator" | "admin",
  { name: string; password: string }
>;
const nodes = JSON.parse(process.env.WHOHAS_E2E_NODES ?? "[]") as { name: string; mac: string }[];
const vips = JSON.parse(process.env.WHOHAS_E2E_VIPS ?? "[]") as string[];
const vip0 = vips[0] ?? "";
const as = (role: "viewer" | "operator" | "admin") => `test-results/.auth/${role}.json`;

test.describe("signing in", () => {
  test.use({ storageState: { cookies: [], origins: [] } });

  test("a page sends an unsigned visitor to /login, a wrong password says so, the right one lands where they were going", async ({
    page,
  }) => {
    await page.goto(`${url}/nodes`);
    await expect(page).toHaveURL(/\/login\?next=%2Fnodes/);
    await page.getByLabel("User name").fill(users.operator.name);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.locator(".login [role=alert]")).toHaveText("Wrong user name or password.");
    await shots(page, "login", [
      page.getByLabel("User name"),
      page.getByLabel("Password"),
      page.getByRole("button", { name: "Sign in" }),
      page.locator(".login [role=alert]"),
    ]);
    await page.getByLabel("User name").fill(users.operator.name);
    await page.getByLabel("Password").fill(users.operator.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page).toHaveURL(`${url}/nodes`);
    await expect(page.locator("header .who")).toContainText(`${users.operator.name} (operator)`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page).toHaveURL(/\/login/);
    await page.goto(`${url}/ips`);
    await expect(page).toHaveURL(/\/login/);
  });
});

test("Probe counts three responders on every request, live, then summarises", async ({ page }) => {
  await page.goto(`${url}/ips/${vip0}`);
  await page.getByTestId("probe").click();
  const panel = page.getByTestId("probe-panel");
  await expect(panel).toHaveAttribute("data-state", "running");
  await expect(panel.getByRole("status")).toContainText("Probing");
  // Live: rounds arrive while it runs, each answered by all three nodes.
  await expect(panel).toHaveAttribute("data-max-responders", "3");
  await expect(page.getByTestId("probe-last")).toContainText("several answer");
  await expect(panel).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  const summary = page.getByTestId("probe-summary");
  await expect(summary).toContainText(/(\d+) requests: \1 answered by more than one MAC, 0 unanswered/);
  for (const n of nodes) await expect(summary).toContainText(n.mac);
  await expect(panel.locator(".recharts-bar-rectangle").first()).toBeVisible();
  await shot(page, "probe");
});

test("Force re-announce asks first, runs on the expected owner, and its frames appear in the timeline", async ({ page }) => {
  await page.goto(`${url}/ips/${vip0}`);
  // The lab runs MetalLB layer 2 without ServiceL2Status: whohas names the announcer and computes MetalLB's election.
  await expect(page.getByTestId("announcer")).toHaveAttribute("data-announcer", "metallb-l2");
  await expect(page.getByTestId("announcer")).toContainText("Announced by: MetalLB layer 2");
  await expect(page.getByTestId("expected-owner")).toContainText("(computed: MetalLB election)");
  const owner = (await page.getByTestId("expected-owner").locator("strong").innerText()).trim();
  expect(nodes.map((n) => n.name)).toContain(owner);
  // The owner's speaker announced when it took the IP over: count what this button adds on top.
  const announced = page.locator(`[data-testid="responder"][data-node="${owner}"] [data-testid="announcements"]`);
  const before = Number(await announced.getAttribute("data-count"));
  await page.getByTestId("reannounce").click();
  await expect(page.getByRole("dialog")).toContainText(`Announce ${vip0} from ${owner}?`);
  await page.getByTestId("confirm-reannounce").click();
  await expect(page.getByRole("status").filter({ hasText: "is announcing" })).toBeVisible();
  await expect(page.getByTestId("reannounce-result")).toContainText(`${owner} announced ${vip0}`, { timeout: 30_000 });
  // MetalLB's timing: a burst (request + reply) every 1.1 s until 5 s after the last of the 5 s: at least 8 frames.
  await expect.poll(async () => Number(await announced.getAttribute("data-count")), { timeout: 20_000 }).toBeGreaterThanOrEqual(before + 8);
  await expect(page.getByTestId("timeline")).toHaveAttribute("data-series", new RegExp(`${owner} announcements`), { timeout: 30_000 });
  await shot(page, "reannounce");
});

test("Re-announce together: every IP of the Service, each from its own owner, with its time", async ({ page }) => {
  await page.goto(`${url}/ips/${vip0}`);
  const owner = (await page.getByTestId("expected-owner").locator("strong").innerText()).trim();
  const group = page.getByTestId("group-announce").first();
  const name = (await group.getAttribute("data-group")) ?? "";
  expect(name).toMatch(/^Service /);
  await group.getByTestId("reannounce-group").click();
  await expect(page.getByRole("dialog")).toContainText(`Announce every IP of ${name}?`);
  await group.getByTestId("confirm-reannounce-group").click();
  // The batch started here (the button says so while it runs; a refusal would be an alert).
  await expect(group.getByTestId("reannounce-group")).toContainText(`Announcing ${name}`);
  const row = group.locator(`[data-testid="announced"] tr[data-ip="${vip0}"]`);
  await expect(row).toHaveAttribute("data-state", "ok", { timeout: 30_000 });
  await expect(row.locator("td").nth(1)).toHaveText(owner);
  await expect(row.locator("td").nth(2)).toHaveText(/s ago|just now/);
  const rows = group.locator('[data-testid="announced"] tbody tr');
  for (const r of await rows.all()) await expect(r).toHaveAttribute("data-state", "ok", { timeout: 30_000 });
  const n = await rows.count();
  await expect(group.locator('[data-testid="announced"] caption')).toHaveText(
    `${name}: re-announced by ${users.operator.name}: ${n} of ${n} announced`,
  );
  await expect(group.getByRole("alert")).toHaveCount(0);
  await shot(page, "reannounce-group");
});

test("a viewer sees the actions but cannot use them", async ({ browser }) => {
  const page = await browser.newPage({ storageState: as("viewer") });
  await page.goto(`${url}/ips/${vip0}`);
  await expect(page.getByTestId("probe")).toBeDisabled();
  await expect(page.getByTestId("reannounce")).toBeDisabled();
  await expect(page.getByTestId("reannounce-group").first()).toBeDisabled();
  await expect(page.getByText("Force re-announce: needs the operator role.")).toBeVisible();
  await page.goto(`${url}/incidents`);
  await expect(page.getByTestId("acknowledge")).toHaveCount(0);
  await page.close();
});

test("an operator acknowledges an incident; the admin's audit log shows every action with its user", async ({ page, browser }) => {
  await page.goto(`${url}/incidents`);
  const row = page.locator('[data-testid="incidents-open"] tr[data-type="multi-responder"]').first();
  await row.getByTestId("acknowledge").click();
  await expect(row.getByTestId("acknowledged")).toContainText(`by ${users.operator.name}`);

  const admin = await browser.newPage({ storageState: as("admin") });
  await admin.goto(`${url}/settings`);
  const audit = admin.getByTestId("audit");
  for (const action of ["incident.acknowledge", "ip.reannounce", "ip.probe", "ip.probe.result"]) {
    await expect(audit.locator(`tr[data-action="${action}"]`).first()).toContainText(users.operator.name);
  }
  // Settings: a read-API token is made, shown once, and works.
  await admin.getByTestId("token-name").fill("e2e");
  await admin.getByRole("button", { name: "Make token" }).click();
  const token = (await admin.getByTestId("new-token").innerText()).trim();
  const res = await fetch(`${url}/api/v1/ips`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  await expect(admin.getByTestId("tokens")).toContainText("e2e");

  // Settings: an alert receiver is added and "Send test" shows what it answered.
  const bodies: string[] = [];
  const hook = createServer((req, res) => {
    let b = "";
    req.on("data", (c: Buffer) => (b += c.toString()));
    req.on("end", () => {
      bodies.push(b);
      res.writeHead(202).end("accepted by e2e");
    });
  });
  hook.listen(0, "127.0.0.1");
  await new Promise((r) => hook.once("listening", r));
  await admin.getByTestId("receiver-name").fill("e2e-hook");
  await admin.getByTestId("receiver-url").fill(`http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`);
  await admin.getByTestId("receiver-format").selectOption("alertmanager");
  await admin.getByRole("button", { name: "Add receiver" }).click();
  const receiver = admin.locator('[data-testid="receivers"] tr[data-receiver="e2e-hook"]');
  await expect(receiver).toContainText("Alertmanager webhook (v4)");
  await receiver.getByTestId("test-receiver").click();
  await expect(admin.getByTestId("test-result")).toContainText("HTTP 202");
  // Only the status comes back: the answer's body would let Settings read whatever a URL the hub reaches says.
  await expect(admin.getByTestId("test-result")).not.toContainText("accepted by e2e");
  expect((JSON.parse(bodies[0] ?? "{}") as { version?: string }).version).toBe("4");
  hook.close();
  await shots(admin, "settings", [
    admin.getByTestId("retention-select"),
    ...columns(admin.getByTestId("tokens"), ["Name", "Made by", "Last used"]),
    ...columns(admin.getByTestId("receivers"), ["Name", "Format", "URL", "Problems"]),
    ...columns(admin.getByTestId("audit"), ["When", "User", "Action", "Outcome", "Detail"]),
  ]);
  await admin.close();
});

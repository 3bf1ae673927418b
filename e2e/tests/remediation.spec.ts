import { expect, test } from "@playwright/test";
import { execFileSync } from "node:child_process";
import { shot, shots } from "./shots.js";

// Runs after the page tests (files run in name order): the fix changes the lab for good, as it does a cluster
// (kube-proxy never resets the sysctls).
const url = process.env.WHOHAS_E2E_URL ?? "";
const kubeconfig = process.env.WHOHAS_E2E_KUBECONFIG ?? "";
const users = JSON.parse(process.env.WHOHAS_E2E_USERS ?? "{}") as Record<"viewer" | "operator" | "admin", { name: string }>;
const vips = JSON.parse(process.env.WHOHAS_E2E_VIPS ?? "[]") as string[];
/** Every LoadBalancer IP: the IPv4 ones and the IPv6 ones of the dual-stack lab. */
const serviceIps = [...vips, ...(JSON.parse(process.env.WHOHAS_E2E_VIPS6 ?? "[]") as { ip: string }[]).map((v) => v.ip)];
const configText = () =>
  execFileSync(
    "kubectl",
    ["--kubeconfig", kubeconfig, "-n", "kube-system", "get", "configmap", "kube-proxy", "-o", "jsonpath={.data.config\\.conf}"],
    { encoding: "utf8" },
  );

test("Fix: from several responders to one, verified; rollback puts back the exact bytes; all of it audited", async ({ page, browser }) => {
  test.setTimeout(240_000);
  // The spare Service goes first: its address is held by a host that is no node (global-setup), which no kube-proxy
  // setting changes, so the fix's verification (every LoadBalancer IP answered by its owner alone) would rightly fail.
  execFileSync("kubectl", ["--kubeconfig", kubeconfig, "-n", "demo", "delete", "service", "spare-0"], { encoding: "utf8" });
  const original = configText();
  await page.goto(url);
  await expect(page.getByTestId("banner")).toContainText("answered by several nodes");
  await page.getByTestId("fix-link").click();
  await expect(page).toHaveURL(/\/fix$/);
  await expect(page.getByTestId("configured-strictarp")).toHaveText("false");
  await expect(page.getByTestId("config-patched").locator("mark")).toContainText("strictARP: true");
  await expect(page.getByTestId("affected")).toContainText("node-1");
  await shots(page, "fix", [
    page.getByTestId("configured-strictarp"),
    page.getByTestId("config-current"),
    page.getByTestId("config-patched"),
    page.getByTestId("apply"),
  ]);

  await page.getByTestId("apply").click();
  await expect(page.getByRole("dialog")).toContainText("Change the cluster?");
  await page.getByTestId("confirm-apply").click();
  const run = page.getByTestId("run");
  await expect(run).toHaveAttribute("data-result", "running");
  await expect(run.locator('li[data-step="rollout"]')).toHaveAttribute("data-state", "ok", { timeout: 60_000 });
  await expect(run).toHaveAttribute("data-result", "verified", { timeout: 120_000 });
  await expect(run.locator('li[data-step="probe"]')).toContainText("every request answered once, by the expected owner");
  // What verification checked: every LoadBalancer IP, probed with requests, each answered by its owner alone.
  const checked = page.getByTestId("checked").locator("tbody tr");
  await expect(checked).toHaveCount(serviceIps.length);
  for (const ip of serviceIps) {
    const row = page.locator(`[data-testid="checked"] tr[data-ip="${ip}"]`);
    await expect(row).toHaveAttribute("data-ok", "true");
    expect(Number(await row.locator("td").nth(2).innerText())).toBeGreaterThan(0);
  }
  // Then each IP's owner announced it: clients and routers that cached another node's MAC take the owner's now.
  await expect(run.locator('li[data-step="announce"]')).toHaveAttribute("data-state", "ok");
  for (const ip of serviceIps)
    await expect(page.locator(`[data-testid="announced"] tr[data-ip="${ip}"]`)).toHaveAttribute("data-state", "ok");
  await shot(page, "fix-verified");
  expect(configText()).toContain("strictARP: true");

  // The IP now has one responder, and the Overview is green.
  await page.goto(`${url}/ips/${vips[0] ?? ""}`);
  await expect(page.locator('[data-testid="responder"][data-answering="true"]')).toHaveCount(1, { timeout: 30_000 });
  await page.goto(url);
  await expect(page.getByTestId("banner")).toContainText("at most one responder", { timeout: 30_000 });

  // Rollback: the original text again, byte for byte.
  await page.goto(`${url}/fix`);
  await page.getByTestId("rollback").first().click();
  await page.getByTestId("confirm-rollback").click();
  await expect(page.getByTestId("run")).toHaveAttribute("data-kind", "rollback");
  await expect(page.getByTestId("run")).toHaveAttribute("data-result", "done", { timeout: 60_000 });
  await expect(page.getByTestId("run-result")).toContainText("until they reboot");
  expect(configText()).toBe(original);

  // The audit log has every step with its user.
  const admin = await browser.newPage({ storageState: "test-results/.auth/admin.json" });
  await admin.goto(`${url}/settings`);
  for (const action of ["remediation.backup", "remediation.apply", "remediation.rollback"])
    await expect(admin.locator(`[data-testid="audit"] tr[data-action="${action}"]`).first()).toContainText(users.operator.name);
  await expect(admin.locator('[data-testid="audit"] tr[data-action="remediation.backup"]').first()).toContainText("strictARP: false");
  await admin.close();
});

import { expect, test, type Locator, type Page } from "@playwright/test";

// Runs after the actions tests (files run in name order): its probe must not overlap theirs. It signs in on its own,
// since signing out ends the session, and changes nothing in the cluster: each confirmation is cancelled (it does
// acknowledge one incident, whohas's own record).
const url = process.env.WHOHAS_E2E_URL ?? "";
const users = JSON.parse(process.env.WHOHAS_E2E_USERS ?? "{}") as Record<"operator", { name: string; password: string }>;
const vips = JSON.parse(process.env.WHOHAS_E2E_VIPS ?? "[]") as string[];
const vip0 = vips[0] ?? "";

const focused = (target: Locator) => target.evaluate((el) => el === document.activeElement);

/**
 * tabTo moves the focus to `target` as a keyboard user does: Tab, or Shift+Tab when the target comes before the
 * focused element. Once there, the element must show a focus ring: it matches :focus-visible and draws an outline.
 */
async function tabTo(page: Page, target: Locator, max = 80): Promise<void> {
  await expect(target).toBeVisible();
  const back = await target.evaluate((el) => {
    const f = document.activeElement;
    return f !== null && f !== document.body && (el.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
  });
  const key = back ? "Shift+Tab" : "Tab";
  for (let i = 0; i < max && !(await focused(target)); i++) await page.keyboard.press(key);
  const what = await target.evaluate((el) => el.outerHTML.slice(0, 120));
  expect(await focused(target), `${key} never reached ${what}`).toBe(true);
  const ring = await target.evaluate((el) => {
    const s = getComputedStyle(el);
    return el.matches(":focus-visible") && s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2;
  });
  expect(ring, `${what} has the focus but no visible focus ring`).toBe(true);
}

/** navigate follows a top-bar link from the keyboard and checks the page it opens is marked current. */
async function navigate(page: Page, label: string, path: RegExp): Promise<void> {
  const link = page.getByRole("navigation", { name: "pages" }).getByRole("link", { name: label, exact: true });
  await tabTo(page, link);
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(path);
  await expect(link).toHaveAttribute("aria-current", "page");
}

test.use({ storageState: { cookies: [], origins: [] } });

test("the keyboard alone signs in, reaches every main action and uses it, with a focus ring on each", async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto(`${url}/login`);
  await tabTo(page, page.getByLabel("User name"));
  await page.keyboard.type(users.operator.name);
  await tabTo(page, page.getByLabel("Password"));
  await page.keyboard.type(users.operator.password);
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(`${url}/`);

  await navigate(page, "Nodes", /\/nodes$/);
  await navigate(page, "Incidents", /\/incidents$/);

  // An incident: opened from the list; acknowledged, a command copied and its frames downloaded, all by the keyboard.
  const unacknowledged = page
    .locator('[data-testid="incidents-open"] tr[data-type="multi-responder"]')
    .filter({ has: page.getByTestId("acknowledge") })
    .first();
  await tabTo(page, unacknowledged.getByRole("link", { name: /^#\d+$/ }));
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(/\/incidents\/\d+$/);
  await expect(page.getByTestId("incident-state")).toHaveText("open");
  await tabTo(page, page.getByTestId("acknowledge"));
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("acknowledged")).toContainText(`by ${users.operator.name}`);
  const copy = page.getByRole("button", { name: "copy the command" }).first();
  await tabTo(page, copy);
  await page.keyboard.press("Enter");
  // Copied, or (where the browser refuses the clipboard) the command selected, with a word on how to copy it.
  await expect(copy.locator("xpath=..")).toContainText(/Copied|the text is selected/);
  const download = page.getByTestId("download-capture");
  await tabTo(page, download);
  const [file] = await Promise.all([page.waitForEvent("download"), page.keyboard.press("Enter")]);
  expect(file.suggestedFilename()).toMatch(/^whohas-.*-incident-\d+\.pcapng$/);

  // Fix: the main button opens its confirmation with the focus on Cancel, whose Enter changes nothing.
  await navigate(page, "Fix", /\/fix$/);
  const apply = page.getByTestId("apply");
  await tabTo(page, apply);
  await page.keyboard.press("Space");
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText("Change the cluster?");
  await expect(dialog.getByRole("button", { name: "Cancel" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(dialog).toBeHidden();
  await expect(apply).toBeFocused();
  await expect(page.getByTestId("run")).toHaveCount(0);
  await expect(page.getByTestId("configured-strictarp")).toHaveText("false");

  // IPs: search, filter and sort, each kept in the URL.
  await navigate(page, "IPs", /\/ips$/);
  await tabTo(page, page.getByTestId("search"));
  await page.keyboard.type(vip0);
  await expect(page).toHaveURL(new RegExp(`q=${vip0.replaceAll(".", "\\.")}`));
  await tabTo(page, page.getByTestId("filter-state"));
  // A closed select takes the next option on the arrow key, as on every desktop.
  await page.keyboard.press("ArrowDown");
  await expect(page).toHaveURL(/state=multi-responder/);
  await expect(page.locator(`[data-ip="${vip0}"]`)).toHaveCount(1);
  const byState = page.getByRole("button", { name: "State", exact: true });
  await tabTo(page, byState);
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(/sort=state/);
  await expect(page.getByRole("columnheader", { name: /State/ })).toHaveAttribute("aria-sort", "ascending");
  await page.keyboard.press("Space");
  await expect(page).toHaveURL(/dir=desc/);
  await expect(page.getByRole("columnheader", { name: /State/ })).toHaveAttribute("aria-sort", "descending");
  const ipLink = page.locator(`[data-ip="${vip0}"]`).getByRole("link");
  await tabTo(page, ipLink);
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(new RegExp(`/ips/${vip0.replaceAll(".", "\\.")}$`));

  // The IP page: Probe runs to its end (it only asks who has the IP); Force re-announce is reached, then cancelled.
  const probe = page.getByTestId("probe");
  await tabTo(page, probe);
  await page.keyboard.press("Space");
  const panel = page.getByTestId("probe-panel");
  await expect(panel).toHaveAttribute("data-state", "running");
  await expect(panel).toHaveAttribute("data-state", "done", { timeout: 30_000 });
  const reannounce = page.getByTestId("reannounce");
  await tabTo(page, reannounce);
  await page.keyboard.press("Enter");
  await expect(dialog).toContainText(`Announce ${vip0} from`);
  const cancel = dialog.getByRole("button", { name: "Cancel" });
  await expect(cancel).toBeFocused();
  await page.keyboard.press("Shift+Tab");
  await expect(page.getByTestId("confirm-reannounce")).toBeFocused();
  await page.keyboard.press("Tab");
  await expect(cancel).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(dialog).toBeHidden();
  await expect(reannounce).toBeFocused();
  await expect(page.getByRole("status").filter({ hasText: "is announcing" })).toHaveCount(0);

  // Re-announce together: the Service's button opens its confirmation on Cancel, and Enter there announces nothing.
  const together = page.getByTestId("reannounce-group").first();
  const label = await together.innerText();
  await tabTo(page, together);
  await page.keyboard.press("Enter");
  await expect(dialog).toContainText("Announce every IP of");
  await expect(dialog.getByRole("button", { name: "Cancel" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(dialog).toBeHidden();
  await expect(together).toBeFocused();
  await expect(together).toHaveText(label);

  // The timeline's range, by Enter and by Space, and back.
  const range = page.getByRole("group", { name: "time range" });
  for (const [label, key] of [
    ["last 15m", "Enter"],
    ["last 24h", "Space"],
    ["last 1h", "Enter"],
  ] as const) {
    const button = range.getByRole("button", { name: label, exact: true });
    await tabTo(page, button);
    await page.keyboard.press(key);
    await expect(button).toHaveAttribute("aria-pressed", "true");
  }

  await navigate(page, "Overview", new RegExp(`^${url}/$`));

  // The theme switch, by Enter and by Space; then sign out.
  const html = page.locator("html");
  const before = (await html.getAttribute("data-theme")) ?? "";
  await tabTo(page, page.getByRole("button", { name: "switch between light and dark theme" }));
  await page.keyboard.press("Enter");
  await expect(html).toHaveAttribute("data-theme", before === "light" ? "dark" : "light");
  await page.keyboard.press("Space");
  await expect(html).toHaveAttribute("data-theme", before);
  await tabTo(page, page.getByRole("button", { name: "Sign out" }));
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(/\/login/);
});

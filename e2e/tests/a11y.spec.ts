import { AxeBuilder } from "@axe-core/playwright";
import { expect, test, type Page } from "@playwright/test";

// Runs first (files run in name order) and changes nothing: it only reads every page, signed out or as the role that
// sees the most of it (an admin, an operator for Fix), so that every control a role may see is checked.
const url = process.env.WHOHAS_E2E_URL ?? "";
const vips = JSON.parse(process.env.WHOHAS_E2E_VIPS ?? "[]") as string[];
const vip0 = vips[0] ?? "";

/** WCAG_AA: axe's rules for WCAG 2.0, 2.1 and 2.2 at levels A and AA. */
const WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"];
/** COLOUR_RULES: the WCAG A/AA rules a theme's colours decide (text contrast, links told from text by colour alone). */
const COLOUR_RULES = ["color-contrast", "link-in-text-block"];

/** A Visit opens one page as `role` (null: signed out) and waits until its data is drawn, not its skeleton. */
interface Visit {
  readonly name: string;
  readonly role: "viewer" | "operator" | "admin" | null;
  open(page: Page): Promise<void>;
}

const VISITS: readonly Visit[] = [
  {
    name: "login",
    role: null,
    open: async (page) => {
      await page.goto(`${url}/login?error=invalid`);
      await expect(page.getByRole("button", { name: "Sign in" })).toBeVisible();
    },
  },
  {
    name: "overview",
    role: "admin",
    open: async (page) => {
      await page.goto(url);
      await expect(page.getByTestId("banner")).toBeVisible();
      await expect(page.getByTestId("strictarp-nodes")).toBeVisible();
    },
  },
  {
    name: "ips",
    role: "admin",
    open: async (page) => {
      await page.goto(`${url}/ips`);
      await expect(page.locator(`[data-ip="${vip0}"]`)).toBeVisible();
    },
  },
  {
    name: "ip-detail",
    role: "admin",
    open: async (page) => {
      await page.goto(`${url}/ips/${vip0}`);
      await expect(page.getByTestId("ip-state")).toBeVisible();
      await expect(page.getByTestId("timeline")).toBeVisible();
    },
  },
  {
    name: "nodes",
    role: "admin",
    open: async (page) => {
      await page.goto(`${url}/nodes`);
      await expect(page.locator('[data-testid="nodes"] tr[data-up="true"]').first()).toBeVisible();
    },
  },
  {
    name: "incidents",
    role: "admin",
    open: async (page) => {
      await page.goto(`${url}/incidents`);
      await expect(page.locator('[data-testid="incidents-open"] tr[data-incident]').first()).toBeVisible();
    },
  },
  {
    name: "incident",
    role: "admin",
    open: async (page) => {
      await page.goto(`${url}/incidents`);
      const link = page.locator('[data-testid="incidents-open"] tr[data-incident] a[href*="/incidents/"]').first();
      await page.goto(new URL((await link.getAttribute("href")) ?? "", url).href);
      await expect(page.getByTestId("incident-state")).toBeVisible();
    },
  },
  {
    name: "clusters",
    role: "viewer",
    open: async (page) => {
      await page.goto(`${url}/clusters`);
      await expect(page.locator('[data-testid="clusters"] tr[data-cluster="default"]')).toBeVisible();
      await expect(page.getByTestId("single-cluster")).toBeVisible();
    },
  },
  {
    name: "fix",
    role: "operator",
    open: async (page) => {
      await page.goto(`${url}/fix`);
      await expect(page.getByTestId("configured-strictarp")).toBeVisible();
    },
  },
  {
    name: "settings",
    role: "admin",
    open: async (page) => {
      await page.goto(`${url}/settings`);
      await expect(page.getByTestId("retention")).toBeVisible();
    },
  },
];

/**
 * serious runs axe on the page and describes each serious or critical violation for the person who fixes it: the
 * rule, what it asks, where to read more, and every failing element with axe's summary of what is wrong there.
 */
async function serious(page: Page, theme: "light" | "dark"): Promise<string[]> {
  // Both themes draw the same page in other colours: the second is checked for what colours decide.
  const axe = theme === "light" ? new AxeBuilder({ page }).withTags(WCAG_AA) : new AxeBuilder({ page }).withRules(COLOUR_RULES);
  const { violations } = await axe.analyze();
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) =>
      [
        `${v.id} (${v.impact ?? ""}): ${v.help} <${v.helpUrl}>`,
        ...v.nodes.map((n) => `  ${n.target.join(" >> ")}\n    ${(n.failureSummary ?? "").replaceAll("\n", "\n    ")}`),
      ].join("\n"),
    );
}

for (const theme of ["light", "dark"] as const) {
  test.describe(`in the ${theme} theme`, () => {
    for (const visit of VISITS) {
      test(`${visit.name} has no serious or critical WCAG 2 A/AA violation`, async ({ browser }) => {
        // The theme a visitor has before choosing one in the top bar is their system's (Nav reads prefers-color-scheme).
        const context = await browser.newContext({
          colorScheme: theme,
          storageState: visit.role === null ? { cookies: [], origins: [] } : `test-results/.auth/${visit.role}.json`,
        });
        const page = await context.newPage();
        await visit.open(page);
        await expect(page.locator("html")).toHaveAttribute("data-theme", theme);
        await expect(page.getByTestId("loading")).toHaveCount(0);
        await page.screenshot({ path: `test-results/a11y/${visit.name}-${theme}.png`, fullPage: true });
        const found = await serious(page, theme);
        await context.close();
        expect(found.length, `axe found on ${visit.name} (${theme}):\n\n${found.join("\n\n")}`).toBe(0);
      });
    }
  });
}

import { expect, type Locator, type Page } from "@playwright/test";

/** WIDTHS: each page is shot at a laptop's width and at a desktop monitor's. */
const WIDTHS = [1280, 1920] as const;

/** shot saves the whole page as test-results/pages/NAME.png. */
export const shot = (page: Page, name: string) => page.screenshot({ path: `test-results/pages/${name}.png`, fullPage: true });

/** columns are a table's column headers, by name. */
export const columns = (table: Locator, names: readonly string[]) =>
  names.map((name) => table.getByRole("columnheader", { name, exact: true }));

/**
 * shots saves the page, as it is (no second load), as NAME-1280.png and NAME-1920.png. At both widths each of `key`
 * must be visible and whole inside the window's width, not cut off or scrolled away to the right; at 1920 px, so must
 * each of `wide` (what folds away on a laptop's width, such as the IPs table's secondary columns).
 */
export async function shots(page: Page, name: string, key: readonly Locator[], wide: readonly Locator[] = []): Promise<void> {
  const size = page.viewportSize();
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    // Charts redraw for the new width on a ResizeObserver callback: let two frames pass.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    for (const k of width === WIDTHS[0] ? key : [...key, ...wide]) {
      await expect(k).toBeVisible();
      const box = await k.boundingBox();
      const right = (box?.x ?? Infinity) + (box?.width ?? 0);
      expect(right, `${await k.evaluate((el) => el.outerHTML.slice(0, 100))} ends past ${width} px`).toBeLessThanOrEqual(width);
    }
    await shot(page, `${name}-${width}`);
  }
  if (size !== null) await page.setViewportSize(size);
}

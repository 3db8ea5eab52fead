import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { signUp } from "./helpers";

async function accessible(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

/** The vertical centres of `selector`'s elements, rounded. */
async function centres(page: Page, selector: string): Promise<number[]> {
  return page.locator(selector).evaluateAll((els) =>
    els.map((e) => {
      const r = e.getBoundingClientRect();
      return Math.round(r.top + r.height / 2);
    }),
  );
}

test("the header is one line at 1280 px and fits a phone; settings have their tabs; the checkbox sits with its label", async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await signUp(page, "layout");
  await page.goto("/invoices");
  const ys = await centres(page, "header.nav > a.brand, header.nav nav a, header.nav .who, header.nav button");
  expect(ys.length).toBeGreaterThanOrEqual(8);
  expect(Math.max(...ys) - Math.min(...ys), `one line: ${ys}`).toBeLessThanOrEqual(6);

  await page.goto("/settings/members");
  await expect(page.locator('nav.tabs a[aria-current="page"]')).toHaveText("Members");
  await page.locator("nav.tabs").getByRole("link", { name: "API keys" }).click();
  await expect(page.locator("h1")).toHaveText("API keys");
  await expect(page.locator('nav.tabs a[aria-current="page"]')).toHaveText("API keys");
  await accessible(page);

  await page.goto("/invoices/new");
  const checkbox = page.locator('input[name="input[save_customer]"]');
  const [box, label] = await Promise.all([
    checkbox.boundingBox(),
    page.locator("label.checkbox", { has: checkbox }).boundingBox(),
  ]);
  expect(label!.height, "the label is one line, the box beside its text").toBeLessThan(40);
  expect(Math.abs(box!.y + box!.height / 2 - (label!.y + label!.height / 2))).toBeLessThanOrEqual(4);

  await page.setViewportSize({ width: 390, height: 844 });
  for (const path of ["/invoices", "/settings/org", "/invoices/new"]) {
    await page.goto(path);
    const header = await page.locator("header.nav").evaluate((e) => [e.scrollWidth, e.clientWidth]);
    expect(header[0], `${path}: the header fits a phone`).toBeLessThanOrEqual(header[1]);
    const tabs = await page.locator("nav.tabs").evaluateAll((els) => els.map((e) => e.scrollWidth <= e.clientWidth));
    expect(tabs.every(Boolean), `${path}: the tabs fit`).toBe(true);
  }
  await page.goto("/invoices");
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(width, "the list fits a phone").toBeLessThanOrEqual(390);
  await accessible(page);
});

import { test, expect } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { hydrated, signUp, submitTwice } from "./helpers";

async function accessible(page: import("@playwright/test").Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

test("a CSV of customers is previewed with its refused rows, then added once, on a phone", async ({ page }) => {
  await signUp(page, "import");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("/customers");
  await page.getByRole("link", { name: "Import from a CSV file" }).click();
  await expect(page).toHaveURL(/\/customers\/import$/);
  await hydrated(page);
  await accessible(page);
  const rows = ["name,email,country"];
  for (let n = 0; n < 600; n++) rows.push(`Customer ${n},c${n}@example.com,DE`);
  rows.push("No Email,,DE");
  await page.setInputFiles('input[name="file"]', {
    name: "customers.csv",
    mimeType: "text/csv",
    buffer: Buffer.from(rows.join("\n") + "\n"),
  });
  await page.getByRole("button", { name: "Check the file" }).click();
  await expect(page).toHaveURL(/\/customers\/import\/[0-9a-f-]{36}$/);
  await expect(page.locator(".import-summary")).toContainText("601 rows, 600 can be imported, 1 cannot.");
  await expect(page.locator("tr.import-error-row td").first()).toHaveText("602");
  await accessible(page);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await hydrated(page);
  // Two presses reach the server (the second before the first answers): one import.
  await submitTwice(page, page.getByRole("button", { name: "Add 600 customers" }), "/rpc/apply_customer_import");
  // The page shows the progress and reloads itself until the worker is done.
  await expect(page.locator(".import-done")).toHaveText("Done: 600 customers added.", { timeout: 30_000 });
  await page.goto("/customers");
  await expect(page.locator("tr.customer-row")).toHaveCount(100);
  await page.goto("/customers?q=Customer%20599");
  await expect(page.locator("tr.customer-row")).toHaveCount(1);
});

import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { signUp, openForm, hydrated, INVOICE_URL } from "./helpers";

/** Cases of the totals table (app/src/model/totals.rs): rounding half up, a percent and an amount
 *  discount spread over lines, two rates, a zero-decimal currency. */
const CASES = [
  { currency: "usd", lines: [["1.5", "150.00", "VAT 20%"]], discount: ["10", "percent"] },
  { currency: "eur", lines: [["3", "19.99", "VAT 20%"], ["0.333", "10.01", "Reduced 5.5%"], ["2", "0.05", ""]], discount: ["7.77", "amount"] },
  { currency: "jpy", lines: [["7", "333", "VAT 20%"], ["1", "1", "Reduced 5.5%"]], discount: ["12.5", "percent"] },
  { currency: "gbp", lines: [["0.125", "0.99", "Reduced 5.5%"]], discount: ["", "percent"] },
];

async function addTaxRate(page: Page, name: string, percent: string) {
  await page.fill('input[name="name"]', name);
  await page.fill('input[name="percent"]', percent);
  await page.getByRole("button", { name: "Add tax rate" }).click();
  await expect(page.locator("tr.tax-rate", { hasText: name })).toBeVisible();
}

test("the form's totals follow the typing and are the ones the server stores, case by case", async ({ page }) => {
  await signUp(page, "live-totals");
  await page.goto("/settings/org");
  await hydrated(page);
  await addTaxRate(page, "VAT", "20");
  await addTaxRate(page, "Reduced", "5.5");

  for (const c of CASES) {
    await openForm(page);
    await expect(page.locator(".live-totals")).toContainText("Totals show once");
    await page.fill('input[name="input[customer_name]"]', "Ada Lovelace");
    await page.fill('input[name="input[customer_email]"]', "ada@example.com");
    await page.fill('input[name="input[due_date]"]', "2027-01-31");
    await page.selectOption('select[name="input[currency]"]', c.currency);
    for (const [i, [quantity, price, rate]] of c.lines.entries()) {
      if (i > 0) await page.click("a.add-line");
      await page.fill(`input[name="input[lines][${i}][description]"]`, `Line ${i + 1}`);
      await page.fill(`input[name="input[lines][${i}][quantity]"]`, quantity);
      await page.fill(`input[name="input[lines][${i}][unit_amount]"]`, price);
      if (rate) await page.selectOption(`select[name="input[lines][${i}][tax_rate_id]"]`, { label: rate });
    }
    await page.selectOption('select[name="input[discount_kind]"]', c.discount[1]);
    await page.fill('input[name="input[discount]"]', c.discount[0]);
    await expect(page.locator("td.live-total")).toBeVisible();
    const typed = await page.locator("td.live-total").textContent();
    expect(typed, JSON.stringify(c)).toBeTruthy();
    const subtotal = await page.locator("td.live-subtotal").textContent();
    await page.getByRole("button", { name: "Create invoice" }).click();
    await expect(page).toHaveURL(INVOICE_URL);
    // The server's stored totals, computed by the same code, are what the form showed.
    await expect(page.locator("td.total")).toHaveText(typed!);
    await expect(page.locator("tr.subtotal")).toContainText(subtotal!);
  }

  // Each row shows its amount as it is typed, and the panel is accessible.
  await openForm(page);
  await page.fill('input[name="input[lines][0][quantity]"]', "2.5");
  await page.fill('input[name="input[lines][0][unit_amount]"]', "12.35");
  // 30.875, rounded half up.
  await expect(page.locator("td.line-amount").first()).toHaveText("$30.88");
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
});

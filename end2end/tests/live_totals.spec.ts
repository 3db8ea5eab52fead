import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { signUp, openForm, hydrated, INVOICE_URL } from "./helpers";

/** Cases of the totals table: rounding half up, a percent and an amount discount spread over lines,
 *  two rates, a zero-decimal currency; each total worked out by hand from docs/invoices.md's rule:
 *  - usd: 1.5 × 150.00 = 225.00, 10 % off 22.50, VAT 20 % of 202.50 = 40.50: 243.00.
 *  - eur: 59.97 + 3.33 (0.333 × 10.01 = 3.33333) + 0.10 = 63.40; 7.77 off shared 7.35 / 0.41 /
 *    0.01 (largest remainder); VAT 20 % of 52.62 = 10.524 → 10.52, 5.5 % of 2.92 = 0.1606 → 0.16:
 *    63.40 − 7.77 + 10.68 = 66.31.
 *  - jpy: 2331 + 1 = 2332; 12.5 % off 291.5 → 292, all on the first line; 20 % of 2039 = 407.8 →
 *    408, 5.5 % of 1 → 0: 2448.
 *  - gbp: 0.125 × 0.99 = 0.12375 → 0.12; 5.5 % of 0.12 = 0.0066 → 0.01: 0.13. */
const CASES = [
  { currency: "usd", lines: [["1.5", "150.00", "VAT 20%"]], discount: ["10", "percent"], total: "$243.00" },
  { currency: "eur", lines: [["3", "19.99", "VAT 20%"], ["0.333", "10.01", "Reduced 5.5%"], ["2", "0.05", ""]], discount: ["7.77", "amount"], total: "€66.31" },
  { currency: "jpy", lines: [["7", "333", "VAT 20%"], ["1", "1", "Reduced 5.5%"]], discount: ["12.5", "percent"], total: "¥2,448" },
  { currency: "gbp", lines: [["0.125", "0.99", "Reduced 5.5%"]], discount: ["", "percent"], total: "£0.13" },
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
    await expect(page.locator("td.live-total"), JSON.stringify(c)).toHaveText(c.total);
    const typed = await page.locator("td.live-total").textContent();
    const subtotal = await page.locator("td.live-subtotal").textContent();
    await page.getByRole("button", { name: "Create invoice" }).click();
    await expect(page).toHaveURL(INVOICE_URL);
    // The server's stored totals are what the form showed: the hand-worked total.
    await expect(page.locator("td.total")).toHaveText(c.total);
    expect(typed).toBe(c.total);
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

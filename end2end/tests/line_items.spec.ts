import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { signUp, openForm, fillInvoice, hydrated, INVOICE_URL, submitTwice } from "./helpers";

async function accessible(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target).join(", ")})`)).toEqual([]);
}

/** Adds a tax rate on the settings page (the page must be open). */
async function addTaxRate(page: Page, name: string, percent: string, twice = false) {
  await page.fill('input[name="name"]', name);
  await page.fill('input[name="percent"]', percent);
  const add = page.getByRole("button", { name: "Add tax rate" });
  if (twice) await submitTwice(page, add, "/rpc/add_tax_rate");
  else await add.click();
  await expect(page.locator("tr.tax-rate", { hasText: name })).toBeVisible();
}

test.describe("line items, taxes, discounts and settings", () => {
  test("settings and a tax rate (two submits each), then an invoice with a decimal quantity, tax, discount, terms and a new customer", async ({ page, browser }) => {
    await signUp(page, "lines");
    await page.goto("/settings/org");
    await hydrated(page);
    await accessible(page);
    await addTaxRate(page, "VAT", "20", true);
    await expect(page.locator("tr.tax-rate")).toHaveCount(1);

    await page.fill('input[name="settings[number_format]"]', "INV-{YYYY}-{seq:4}");
    await page.selectOption('select[name="settings[number_reset]"]', "yearly");
    await submitTwice(page, page.getByRole("button", { name: "Save settings" }), "/rpc/save_org_settings");
    const year = new Date().getUTCFullYear();
    await expect(page.locator(".next-number")).toHaveText(`INV-${year}-0001`);

    const details = page.locator("form.org-details");
    await details.locator('input[name="details[address][line1]"]').fill("1 Harbour Street");
    await details.locator('input[name="details[address][city]"]').fill("Rotterdam");
    await details.locator('input[name="details[address][country]"]').fill("NL");
    await submitTwice(page, details.getByRole("button", { name: "Save business details" }), "/rpc/save_org_details");
    await expect(details.locator('input[name="details[address][city]"]')).toHaveValue("Rotterdam");

    // A refused setting says why and saves nothing.
    await page.fill('input[name="settings[time_zone]"]', "Mars/Olympus_Mons");
    await page.getByRole("button", { name: "Save settings" }).click();
    await expect(page.locator("span.error")).toContainText("Unknown time zone");

    await openForm(page);
    // A business in Rotterdam invoices in euros unless told otherwise.
    await expect(page.locator('select[name="input[currency]"]')).toHaveValue("eur");
    await fillInvoice(page, { quantity: "1.5", price: "150.00" });
    await page.selectOption('select[name="input[lines][0][tax_rate_id]"]', { label: "VAT 20%" });
    await page.fill('input[name="input[discount]"]', "10");
    await page.selectOption('select[name="input[payment_terms_days]"]', "30");
    await page.fill('textarea[name="input[notes]"]', "Thank you!");
    await page.check('input[name="input[save_customer]"]');
    await accessible(page);
    await submitTwice(page, page.getByRole("button", { name: "Create invoice" }), "/rpc/create_invoice");
    await expect(page).toHaveURL(INVOICE_URL);

    // 1.5 × 150.00 = 225.00; 10 % off: 22.50; VAT 20 % of 202.50 = 40.50; total 243.00.
    await expect(page.locator("h1.number")).toHaveText(`INV-${year}-0001`);
    await expect(page.locator("tr.subtotal")).toContainText("€225.00");
    await expect(page.locator("tr.discount")).toContainText("Discount (10%)");
    await expect(page.locator("tr.discount")).toContainText("€22.50");
    await expect(page.locator("tr.tax-total")).toContainText("VAT 20%");
    await expect(page.locator("tr.tax-total")).toContainText("€40.50");
    await expect(page.locator("td.total")).toHaveText("€243.00");
    await expect(page.locator("p.notes")).toHaveText("Thank you!");
    await expect(page.locator("dd", { hasText: "(net 30)" })).toBeVisible();

    // The customer was saved once, with the invoice.
    await page.goto("/customers");
    await expect(page.locator("tr", { hasText: "ada@example.com" })).toHaveCount(1);

    // The customer's page shows the same numbers, and the org's address.
    await page.goBack();
    const link = await page.locator(".public-link a").first().getAttribute("href");
    const fresh = await browser.newContext();
    const customer = await fresh.newPage();
    await customer.goto(link!);
    await expect(customer.locator("td.total")).toHaveText("€243.00");
    await expect(customer.locator("tr.tax-total")).toContainText("€40.50");
    await expect(customer.locator(".from .address")).toContainText("Rotterdam");
    await accessible(customer);
    await fresh.close();
  });
});

test.describe("settings without JavaScript", () => {
  test.use({ javaScriptEnabled: false });

  test("add and archive a tax rate with plain forms", async ({ page }) => {
    await signUp(page, "lines-nojs");
    await page.goto("/settings/org");
    await addTaxRate(page, "GST", "8.875");
    await expect(page.locator("tr.tax-rate")).toContainText("8.875%");
    await page.getByRole("button", { name: "Archive" }).click();
    await expect(page.locator("tr.tax-rate .status")).toHaveText("archived");
    // An archived rate is not offered for new lines.
    await openForm(page, false);
    await expect(page.locator('select[name="input[lines][0][tax_rate_id]"] option')).toHaveCount(1);
  });
});

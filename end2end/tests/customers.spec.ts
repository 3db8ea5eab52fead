import { test, expect } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { signUp, openForm, hydrated, INVOICE_URL, submitTwice } from "./helpers";

async function accessible(page: import("@playwright/test").Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

test("create a customer (two submits: one), pick it on an invoice, find the invoice by it", async ({ page }) => {
  await signUp(page, "customers");
  await page.goto("/customers/new");
  await hydrated(page);
  await accessible(page);
  await page.fill('input[name="input[name]"]', "Zoë Müller GmbH");
  await page.fill('input[name="input[email]"]', "ap@mueller.example");
  await page.fill('input[name="input[address][line1]"]', "Hauptstraße 5");
  await page.fill('input[name="input[address][postal_code]"]', "10115");
  await page.fill('input[name="input[address][city]"]', "Berlin");
  await page.fill('input[name="input[address][country]"]', "DE");
  await submitTwice(page, page.getByRole("button", { name: "Create customer" }), "/rpc/save_customer");
  await expect(page.locator("h1.customer-name")).toHaveText("Zoë Müller GmbH");
  await page.goto("/customers");
  await expect(page.locator("tr.customer-row")).toHaveCount(1);
  await accessible(page);
  await page.goto("/customers?q=zo");
  await expect(page.locator("tr.customer-row")).toHaveCount(1);
  await page.goto("/customers?q=nobody");
  await expect(page.locator("tr.customer-row")).toHaveCount(0);

  await openForm(page);
  await page.selectOption('select[name="input[customer_id]"]', { label: "Zoë Müller GmbH <ap@mueller.example>" });
  await page.fill('input[name="input[due_date]"]', "2027-01-31");
  await page.fill('input[name="input[lines][0][description]"]', "Audit");
  await page.fill('input[name="input[lines][0][quantity]"]', "1");
  await page.fill('input[name="input[lines][0][unit_amount]"]', "500.00");
  await page.getByRole("button", { name: "Create invoice" }).click();
  await expect(page).toHaveURL(INVOICE_URL);
  await expect(page.locator(".customer")).toHaveText("Zoë Müller GmbH");

  await page.goto("/invoices?q=zo");
  await expect(page.locator("tr.invoice-row")).toHaveCount(1);
  await page.goto("/invoices?status=draft");
  await expect(page.locator("tr.invoice-row")).toHaveCount(0);
  await accessible(page);
});

import { test, expect } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { fillInvoice, hydrated, INVOICE_URL, openForm, signUp, submitButton } from "./helpers";

test("the dashboard shows what is owed, its chart with its table, and passes axe on a phone", async ({ page }) => {
  await signUp(page, "dash");
  await page.goto("/dashboard");
  await expect(page.locator(".figure.empty")).toHaveText("Nothing is owed to you.");
  await openForm(page);
  await fillInvoice(page, { quantity: "2", price: "125.00", due: "2020-01-31" });
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("/dashboard");
  await hydrated(page);
  await expect(page.locator(".figure.outstanding .amount")).toHaveText("$250.00");
  await expect(page.locator(".figure.outstanding .overdue")).toHaveText("$250.00 overdue");
  await expect(page.locator("table.aging tbody td").last()).toHaveText("$250.00");
  await expect(page.locator("svg.chart rect.bar")).toHaveCount(1);
  await expect(page.locator("table.revenue-table td.invoiced")).toHaveText("$250.00");
  await expect(page.locator("tr.debtor td.owed")).toHaveText("$250.00");
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(width, "nothing wider than the phone").toBeLessThanOrEqual(390);
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);

  // The aging report, and the same as a CSV file.
  await page.getByRole("link", { name: "Aging by customer" }).click();
  await expect(page).toHaveURL(/\/reports\/aging$/);
  await expect(page.locator("tr.aging-row td.total")).toHaveText("$250.00");
  const again = await new AxeBuilder({ page }).analyze();
  expect(again.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id)).toEqual([]);
  const csv = await page.request.get("/reports/aging.csv");
  expect(csv.status()).toBe(200);
  expect(await csv.text()).toContain("250.00");

  // The tax summary of the quarter so far, on the phone too; its period form is a plain GET.
  await page.getByRole("link", { name: "Tax summary" }).click();
  await expect(page).toHaveURL(/\/reports\/tax$/);
  const row = page.locator("table.tax-report tr.tax-row");
  await expect(row.locator("th")).toHaveText("No tax rate");
  await expect(row.locator("td").nth(1)).toHaveText("$250.00");
  await expect(page.locator("tr.tax-net-row td").first()).toHaveText("$250.00");
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  const tax = await new AxeBuilder({ page }).analyze();
  expect(tax.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id)).toEqual([]);
  await page.locator("form.period input[name=from]").fill("2000-01-01");
  await page.locator("form.period input[name=to]").fill("2000-12-31");
  await page.locator("form.period button").click();
  await expect(page).toHaveURL(/from=2000-01-01&to=2000-12-31/);
  await expect(page.locator("p.empty").first()).toHaveText("None in this period.");

  // Exports: the page passes axe; the invoice list's link carries its filters, and the file
  // lists what the filtered list does.
  await page.getByRole("link", { name: "Exports" }).click();
  await expect(page).toHaveURL(/\/reports\/exports$/);
  const exportsAxe = await new AxeBuilder({ page }).analyze();
  expect(exportsAxe.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id)).toEqual([]);
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.locator("form[action='/exports/payments.csv'] button").click(),
  ]);
  expect(download.suggestedFilename()).toBe("payments.csv");
  await page.goto("/invoices?status=open");
  const link = page.locator("a.export-invoices");
  await expect(link).toHaveAttribute("href", "/exports/invoices.csv?status=open");
  const file = await page.request.get((await link.getAttribute("href"))!);
  const text = await file.text();
  expect(text.split("\r\n")[0]).toContain("id,number,status");
  expect(text).toContain(",open,");
});

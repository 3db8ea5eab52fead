import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { fillInvoice, hydrated, INVOICE_URL, openForm, signUp, submitButton } from "./helpers";

/** A 120 × 40 teal PNG. */
const LOGO = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAHgAAAAoCAYAAAA16j4lAAAAd0lEQVR4nO3RsQkAIADAMHfvdfF5PUOoGbIXOuZeh67xOgCDMRiDP2VwnMFxBscZHGdwnMFxBscZHGdwnMFxBscZHGdwnMFxBscZHGdwnMFxBscZHGdwnMFxBscZHGdwnMFxBscZHGdwnMFxBscZHGdwnMFxBsdd/mj+3aDV/7QAAAAASUVORK5CYII=", "base64");

async function noAxeViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

test("the org's logo, colour, footer and language reach the customer's page on a phone", async ({ page, browser }) => {
  await signUp(page, "brand");
  await page.goto("/settings/org");
  await hydrated(page);

  // A file that is not an image is refused with a reason, nothing stored.
  await page.locator('form.upload-logo input[type="file"]').setInputFiles({ name: "logo.svg", mimeType: "image/svg+xml", buffer: Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>") });
  await page.locator("form.upload-logo button").click();
  await expect(page.locator(".logo-error")).toContainText("Only PNG and JPEG");
  await page.goto("/settings/org");
  await hydrated(page);
  await expect(page.locator(".logo-preview img")).toHaveCount(0);

  await page.locator('form.upload-logo input[type="file"]').setInputFiles({ name: "logo.png", mimeType: "image/png", buffer: LOGO });
  await page.locator("form.upload-logo button").click();
  await expect(page).toHaveURL(/\/settings\/org$/);
  await expect(page.locator(".logo-preview img")).toBeVisible();
  await hydrated(page);

  const branding = page.locator("form.branding-form");
  await branding.locator('input[name="branding[accent_color]"]').fill("#0b7a75");
  await branding.locator('textarea[name="branding[footer_text]"]').fill("Bakkerij Jansen B.V. · KvK 12345678");
  // A plain form post: the server saves, then sends the browser back to the page.
  const [saved] = await Promise.all([
    page.waitForResponse((r) => r.url().includes("/rpc/save_branding")),
    branding.getByRole("button", { name: "Save branding" }).click(),
  ]);
  expect(saved.status()).toBe(302);
  // Saved: a fresh page shows it.
  await page.goto("/settings/org");
  await hydrated(page);
  await expect(branding.locator('textarea[name="branding[footer_text]"]')).toHaveValue("Bakkerij Jansen B.V. · KvK 12345678");

  const details = page.locator("form.org-details");
  await details.locator('select[name="details[locale]"]').selectOption("de");
  const [detailsSaved] = await Promise.all([
    page.waitForResponse((r) => r.url().includes("/rpc/save_org_details")),
    details.getByRole("button", { name: "Save business details" }).click(),
  ]);
  expect(detailsSaved.status()).toBe(302);
  await page.goto("/settings/org");
  await hydrated(page);
  await expect(details.locator('select[name="details[locale]"]')).toHaveValue("de");

  await openForm(page);
  await fillInvoice(page, { quantity: "2", price: "617.28" });
  await page.selectOption(`select[name="input[currency]"]`, "eur");
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);
  const link = await page.locator("p.public-link a").first().getAttribute("href");

  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
  const customer = await context.newPage();
  await customer.goto(link!);
  await expect(customer.locator("html")).toHaveAttribute("lang", "de");
  await expect(customer.locator("img.logo")).toBeVisible();
  await expect(customer.locator(".brand-footer")).toHaveText("Bakkerij Jansen B.V. · KvK 12345678");
  await expect(customer.locator(".amount-due")).toHaveText("1.234,56 €");
  await expect(customer.locator("h1")).toContainText("Rechnung");
  // The accent reaches the page through its one allowed inline style.
  const accent = await customer.locator("a.button.pdf").evaluate((a) => getComputedStyle(a).backgroundColor);
  expect(accent).toBe("rgb(11, 122, 117)");
  await noAxeViolations(customer);
  await context.close();
});

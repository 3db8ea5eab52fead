import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { hydrated, mailed, mailTo, MAIL_DIR, signUp, submitTwice } from "./helpers";

async function noAxeViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

const QUOTE_URL = /\/quotes\/[0-9a-f-]{36}$/;

/** A new org's quote of 2 × 150.00 to `email` through the form (submitted twice at once), sent;
 * returns the customer's page link from the email. */
async function sendQuote(page: Page, tag: string, email: string): Promise<string> {
  await signUp(page, tag);
  await page.goto("/quotes/new");
  await hydrated(page);
  await page.fill('input[name="input[customer_name]"]', "Builder Co");
  await page.fill('input[name="input[customer_email]"]', email);
  await page.fill('input[name="input[due_date]"]', "2027-06-30");
  await page.fill('input[name="input[lines][0][description]"]', "Kitchen fitting");
  await page.fill('input[name="input[lines][0][quantity]"]', "2");
  await page.fill('input[name="input[lines][0][unit_amount]"]', "150.00");
  // The live totals work on the quote form too.
  await expect(page.locator(".live-totals .live-total")).toContainText("$300.00");
  await submitTwice(page, page.locator("button.create-quote"), "/rpc/create_quote");
  await expect(page).toHaveURL(QUOTE_URL);
  await page.goto("/quotes");
  await expect(page.locator("tr.quote-row"), "one quote from two submits").toHaveCount(1);
  await page.locator("tr.quote-row a").click();
  await expect(page.locator(".quote .status")).toHaveText("Open");
  await hydrated(page);
  await page.getByRole("button", { name: "Send again" }).click();
  const mail = await mailed(email, "Subject: Quote Q-0001");
  return mail.match(/http:\/\/\S+\/q\/[0-9a-f]{64}/)![0];
}

test("a quote accepted with a double press on a phone becomes one invoice", async ({ page, browser }) => {
  test.skip(!MAIL_DIR, "needs the SMTP sink of scripts/test");
  const email = `quote-${Date.now()}@example.com`;
  const link = await sendQuote(page, "quote", email);

  // The customer, on a phone, with no session: the page loads no script and passes axe.
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const customer = await context.newPage();
  const scripts: string[] = [];
  customer.on("request", (r) => {
    if (r.resourceType() === "script") scripts.push(r.url());
  });
  await customer.goto(link);
  await expect(customer.locator("h1")).toContainText("Quote Q-0001");
  await expect(customer.locator("button.accept")).toHaveText("Accept $300.00");
  await noAxeViolations(customer);
  const width = await customer.evaluate(() => document.documentElement.scrollWidth);
  expect(width, "nothing wider than the phone").toBeLessThanOrEqual(390);

  // Two presses at once: a tap, and the same form posted beside it.
  const action = new URL((await customer.locator("form.accept").getAttribute("action"))!, customer.url()).href;
  const key = await customer.locator('form.accept input[name="key"]').inputValue();
  const [other] = await Promise.all([
    customer.request.post(action, { form: { key }, maxRedirects: 0 }),
    customer.locator("button.accept").tap(),
  ]);
  expect(other.status(), "the other press was answered").toBe(303);
  await expect(customer.locator(".public-status")).toHaveText("Accepted: thank you");
  await expect(customer.locator("button.accept")).toHaveCount(0);
  await noAxeViolations(customer);
  await customer.locator("a.invoice-link").tap();
  await expect(customer).toHaveURL(/\/i\/[0-9a-f]{64}$/);
  await expect(customer.locator(".amount-due")).toHaveText("$300.00");
  expect(scripts, "the customer's pages load no script").toEqual([]);
  await context.close();

  // The owner sees the quote accepted, linked to its one invoice.
  await page.goto("/quotes");
  await expect(page.locator("tr.quote-row .status")).toHaveText("Accepted");
  await page.locator("tr.quote-row a").click();
  await page.locator("a.quote-invoice").click();
  await expect(page.locator("h1.number")).not.toHaveText("Draft");
  await page.goto("/invoices");
  await expect(page.locator("tr.invoice-row"), "one invoice").toHaveCount(1);
});

import { test, expect, Page, Browser } from "@playwright/test";
import {
  signUp,
  openForm,
  fillInvoice,
  hydrated,
  INVOICE_URL,
  MAIL_DIR,
  mailed,
  mailTo,
  reloadAndRead,
  reloadUntilPaid,
} from "./helpers";

// scripts/test runs a real SMTP server (scripts/smtp_sink.py) writing each message here, and the local
// Stripe with --chaos (every event delivered two or three times, some at once, out of order).
const STRIPE = process.env.STRIPE_API_BASE ?? "http://127.0.0.1:12111";

/** Sessions the local Stripe made for `invoiceId`. */
async function sessionsAtStripe(page: Page, invoiceId: string): Promise<string[]> {
  const res = await page.request.get(`${STRIPE}/v1/checkout/sessions`, {
    headers: { authorization: "Bearer sk_test_local" },
  });
  const list = await res.json();
  return list.data.filter((s: { client_reference_id: string }) => s.client_reference_id === invoiceId).map((s: { id: string }) => s.id);
}

/** Calls one of the local Stripe's test helpers for checkout session `session`. */
async function stripeHelper(page: Page, session: string, helper: "hold_settlement" | "release_settlement") {
  const res = await page.request.post(`${STRIPE}/v1/test_helpers/checkout/sessions/${session}/${helper}`, {
    headers: { authorization: "Bearer sk_test_local" },
  });
  expect(res.status(), `${helper} of ${session}`).toBe(200);
}

/** An invoice for `email`, sent; returns its id and the link the email carries. */
async function sendInvoice(page: Page, email: string): Promise<{ id: string; link: string }> {
  await openForm(page);
  await fillInvoice(page, { email, quantity: "2", price: "50.00" });
  await page.getByRole("button", { name: "Create invoice" }).click();
  await expect(page).toHaveURL(INVOICE_URL);
  const id = page.url().split("/").pop()!;
  await hydrated(page);
  await page.getByRole("button", { name: "Send invoice" }).click();
  const mail = await mailed(email, "Subject: Invoice");
  const link = mail.match(/http:\/\/\S+\/i\/[0-9a-f]{64}/)![0];
  return { id, link };
}

/**
 * The customer, in a fresh browser without a session, presses Pay twice at once; both presses reach
 * the server and land on one checkout. (A double click on a page without script may send one
 * request, the second navigation replacing the first: one press is a click, the other the same form
 * posted beside it, so both are sure to arrive.)
 */
async function payTwice(browser: Browser, link: string) {
  const context = await browser.newContext();
  const customer = await context.newPage();
  await customer.goto(link);
  await expect(customer.locator("button.pay")).toHaveText("Pay $100.00");
  const action = new URL((await customer.locator("form.pay").getAttribute("action"))!, customer.url()).href;
  const [other] = await Promise.all([
    customer.request.post(action, { maxRedirects: 0 }),
    customer.locator("button.pay").click(),
  ]);
  await expect(customer).toHaveURL(/\/checkout\/cs_test_/);
  expect(other.status(), "the other press was answered").toBe(303);
  expect(new URL(other.headers()["location"], customer.url()).href, "both presses land on one checkout").toBe(customer.url());
  return { context, customer };
}

test.describe("the customer pays", () => {
  test("by card: two presses, one session, paid, one payment, one receipt, replays shown", async ({ page, browser }) => {
    test.skip(!MAIL_DIR, "needs the SMTP sink of scripts/test");
    await signUp(page, "pay-card");
    const email = `card-${Date.now()}@example.com`;
    const { id, link } = await sendInvoice(page, email);
    const { context, customer } = await payTwice(browser, link);
    expect(await sessionsAtStripe(page, id)).toHaveLength(1);
    await customer.getByRole("button", { name: "Pay by card" }).click();
    await expect(customer).toHaveURL(/\/i\/[0-9a-f]{64}\?paid=1$/);
    await reloadUntilPaid(customer);
    await context.close();

    await page.goto(`/invoices/${id}`);
    await expect(page.locator("tr.payment")).toHaveCount(1);
    await expect(page.locator("tr.payment .payment-status")).toHaveText("succeeded");
    // Chaos delivered the event more than once: the first won, the others were replays.
    await page.goto("/activity?surface=webhook");
    const wonAndReplayed = async () => {
      await page.reload();
      const won = await page.locator("tr.attempt.webhook.won").count();
      const replays = await page.locator("tr.attempt.webhook.replay").count();
      return [won, Math.min(replays, 1)];
    };
    await expect
      .poll(wonAndReplayed, { message: "one event won, its repeats replayed", timeout: 30_000 })
      .toEqual([1, 1]);
    await expect
      .poll(() => mailTo(email).filter((m) => m.includes("Subject: Receipt")).length, { message: "one receipt", timeout: 30_000 })
      .toBe(1);
  });

  test("by bank debit: processing, then paid", async ({ page, browser }) => {
    test.skip(!MAIL_DIR, "needs the SMTP sink of scripts/test");
    await signUp(page, "pay-bank");
    const { id, link } = await sendInvoice(page, `bank-${Date.now()}@example.com`);
    const { context, customer } = await payTwice(browser, link);
    // The bank's answer waits until the test has seen the payment processing.
    const session = customer.url().split("/").pop()!;
    await stripeHelper(page, session, "hold_settlement");
    await customer.getByRole("button", { name: "Pay by bank debit" }).click();
    await expect(customer).toHaveURL(/\?paid=1$/);
    await expect
      .poll(async () => (await reloadAndRead(customer, ".public-status")).join(" "), { message: "processing", timeout: 30_000 })
      .toMatch(/^Payment processing/);
    await expect(customer.locator("button.pay")).toHaveCount(0);
    await page.goto(`/invoices/${id}`);
    await expect(page.locator("tr.payment .payment-status")).toHaveText("processing");

    await stripeHelper(page, session, "release_settlement");
    await reloadUntilPaid(customer);
    await context.close();
    await page.goto(`/invoices/${id}`);
    await expect(page.locator("tr.payment .payment-status")).toHaveText("succeeded");
  });

  test("declined: still open, and Pay works again on the same session", async ({ page, browser }) => {
    test.skip(!MAIL_DIR, "needs the SMTP sink of scripts/test");
    await signUp(page, "pay-decline");
    const { id, link } = await sendInvoice(page, `decline-${Date.now()}@example.com`);
    const { context, customer } = await payTwice(browser, link);
    const first = customer.url();
    await customer.getByRole("button", { name: "Decline" }).click();
    await expect(customer.locator("h1.declined")).toBeVisible();
    await customer.getByRole("link", { name: "Back to the invoice" }).click();
    await expect(customer.locator(".public-status")).toContainText("Due");
    await customer.locator("button.pay").click();
    await expect(customer).toHaveURL(first);
    expect(await sessionsAtStripe(page, id)).toHaveLength(1);
    await context.close();
  });
});

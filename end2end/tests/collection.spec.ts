import { test, expect, Page, Browser } from "@playwright/test";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { hydrated, MAIL_DIR, mailTo, reloadAndRead, signUp, openForm, INVOICE_URL, submitTwice } from "./helpers";

// scripts/test runs the local Stripe with --chaos (every event two or three times, out of order)
// and debits that settle after a few seconds.
const STRIPE = process.env.STRIPE_API_BASE ?? "http://127.0.0.1:12111";

/** `server admin advance-clock` (dev only): the workers' time passes. */
function advanceClock(days: number, hours = 0) {
  const server = path.resolve(__dirname, "../../target/debug/server");
  execFileSync(server, ["admin", "advance-clock", "--days", `${days}`, "--hours", `${hours}`], {
    env: { ...process.env, LEPTOS_ENV: "DEV", RUST_LOG: "warn" },
    encoding: "utf8",
  });
}

/** An invoice for a new customer `email`, saved as a customer of the org, collected as `method`;
 * returns its id and its customer's page. */
async function invoiceFor(page: Page, email: string, method: "send_invoice" | "charge_automatically") {
  await openForm(page);
  await page.fill('input[name="input[customer_name]"]', "Ada Lovelace");
  await page.fill('input[name="input[customer_email]"]', email);
  await page.check('input[name="input[save_customer]"]');
  await page.fill('input[name="input[due_date]"]', "2031-01-31");
  await page.fill('input[name="input[lines][0][description]"]', "Plan");
  await page.fill('input[name="input[lines][0][quantity]"]', "1");
  await page.fill('input[name="input[lines][0][unit_amount]"]', "125.00");
  await page.selectOption('select[name="input[collection_method]"]', method);
  await page.getByRole("button", { name: "Create invoice" }).click();
  await expect(page).toHaveURL(INVOICE_URL);
  await hydrated(page);
  const id = page.url().split("/").pop()!;
  const link = (await page.locator("p.public-link a").first().getAttribute("href"))!;
  return { id, link };
}

/** The customer, in a browser of their own, presses "Pay automatically next time" twice at once:
 * both presses land on one setup page, where they save `label`. */
async function saveTwice(browser: Browser, link: string, label: string) {
  const context = await browser.newContext();
  const customer = await context.newPage();
  await customer.goto(link);
  const form = customer.locator("form.save-method");
  const action = new URL((await form.getAttribute("action"))!, customer.url()).href;
  const key = (await form.locator('input[name="key"]').getAttribute("value"))!;
  const [other] = await Promise.all([
    customer.request.post(action, { form: { key }, maxRedirects: 0 }),
    form.locator("button.save-method").click(),
  ]);
  await expect(customer).toHaveURL(/\/checkout\/cs_test_/);
  expect(other.status(), "the other press was answered").toBe(303);
  expect(other.headers()["location"], "both presses land on one setup page").toBe(customer.url());
  await customer.getByRole("button", { name: label }).click();
  await expect(customer).toHaveURL(/saved=1/);
  return { context, customer };
}

/** The intents the local Stripe made for `invoice`. */
async function intentsAtStripe(page: Page, invoice: string): Promise<{ id: string; status: string }[]> {
  const res = await page.request.get(`${STRIPE}/v1/payment_intents`, { headers: { authorization: "Bearer sk_test_local" } });
  const list = await res.json();
  return list.data.filter((i: { metadata: { invoice_id: string } }) => i.metadata.invoice_id === invoice);
}

/** A customer `email` saves `label` from a first invoice's page (two presses at once); returns
 * once the owner sees the saved method on the customer's page. */
async function savedMethod(page: Page, browser: Browser, email: string, label: string) {
  const first = await invoiceFor(page, email, "send_invoice");
  const { context } = await saveTwice(browser, first.link, label);
  await context.close();
  await expect
    .poll(async () => {
      await page.goto("/customers");
      await page.locator("tr.customer-row a").first().click();
      return page.locator("li.payment-method").count();
    }, { message: "the owner sees the saved method", timeout: 30_000 })
    .toBe(1);
}

/** An invoice of `amount` for the saved customer `email`, collected automatically; returns its id. */
async function chargedInvoice(page: Page, email: string, amount: string) {
  await openForm(page);
  await page.selectOption('select[name="input[customer_id]"]', { label: `Ada Lovelace <${email}>` });
  await page.fill('input[name="input[due_date]"]', "2031-01-31");
  await page.fill('input[name="input[lines][0][description]"]', "Plan");
  await page.fill('input[name="input[lines][0][quantity]"]', "1");
  await page.fill('input[name="input[lines][0][unit_amount]"]', amount);
  await page.selectOption('select[name="input[collection_method]"]', "charge_automatically");
  await page.getByRole("button", { name: "Create invoice" }).click();
  await expect(page).toHaveURL(INVOICE_URL);
  return page.url().split("/").pop()!;
}

test.describe("collection without asking", () => {
  test("the customer saves a card from their invoice page: two presses, one saved method, the owner sees it", async ({ page, browser }) => {
    await signUp(page, "save-card");
    const { link } = await invoiceFor(page, `save-${Date.now()}@example.com`, "send_invoice");
    const { context, customer } = await saveTwice(browser, link, "Save card 4242 (succeeds)");
    await customer.goto(link);
    await expect
      .poll(async () => reloadAndRead(customer, "li.saved-method .method"), { message: "the card is saved", timeout: 30_000 })
      .toEqual(["visa card ending 4242"]);
    await context.close();
    await page.goto("/customers");
    await page.locator("tr.customer-row a").first().click();
    await expect(page.locator("li.payment-method")).toHaveText(["visa card ending 4242 (default: charged automatically)"]);
  });

  test("an invoice collected automatically is charged once and paid; a SEPA debit shows processing first", async ({ page, browser }) => {
    await signUp(page, "charge-card");
    const email = `charge-${Date.now()}@example.com`;
    // Saved from a first invoice's page; the second is charged when it is issued.
    await savedMethod(page, browser, email, "Save IBAN DE89…3000 (debits succeed)");
    const id = await chargedInvoice(page, email, "80.00");
    await expect
      .poll(async () => (await reloadAndRead(page, "tr.charge-attempt td.state")).join(","), { message: "charged, processing then paid", timeout: 60_000 })
      .toMatch(/^(processing|succeeded)$/);
    await expect
      .poll(async () => (await reloadAndRead(page, ".payment-state")).join(","), { message: "paid once the debit settles", timeout: 60_000 })
      .toBe("paid");
    expect(await intentsAtStripe(page, id), "one charge at Stripe").toHaveLength(1);
  });

  test("the owner sets the retry days (two presses: one save); a declined card is retried on them, then the customer gets the invoice with its Pay link", async ({ page, browser }) => {
    expect(MAIL_DIR, "needs the SMTP sink of scripts/test: the invoice email is checked").not.toBe("");
    await signUp(page, "charge-decline", { verify: true });
    await page.goto("/settings/org");
    await hydrated(page);
    const settings = page.locator("form.collection-settings");
    await expect(settings.locator('input[name="collection[retry_days]"]'), "the default days").toHaveValue("3, 5, 7");
    await settings.locator('input[name="collection[retry_days]"]').fill("2, 4");
    await settings.locator('select[name="collection[fee_kind]"]').selectOption("fixed");
    await settings.locator('input[name="collection[fee]"]').fill("7.50");
    await settings.locator('input[name="collection[fee_after_days]"]').fill("14, 28");
    const { answers } = await submitTwice(page, settings.locator("button.save-collection"), "/rpc/save_collection");
    expect(answers.map((a) => [a.status, a.location]), "both presses answered as the one save").toEqual([
      [302, "/settings/org?saved=collection"],
      [302, "/settings/org?saved=collection"],
    ]);
    await expect(page.locator("section[aria-labelledby=\"collection-heading\"] p.saved")).toHaveText("Collection settings saved.");
    await page.goto("/settings/org");
    await expect(settings.locator('input[name="collection[retry_days]"]')).toHaveValue("2, 4");
    await expect(settings.locator('select[name="collection[fee_kind]"]')).toHaveValue("fixed");
    await expect(settings.locator('input[name="collection[fee]"]')).toHaveValue("7.50");
    await expect(settings.locator('input[name="collection[fee_after_days]"]')).toHaveValue("14, 28");

    const email = `decline-${Date.now()}@example.com`;
    await savedMethod(page, browser, email, "Save card 0341 (declines later)");
    const id = await chargedInvoice(page, email, "40.00");
    const states = async () => (await reloadAndRead(page, "tr.charge-attempt td.state")).join(",");
    await expect.poll(states, { message: "the first attempt declined", timeout: 30_000 }).toBe("failed");
    // The org's days: 2 and 4 after the first.
    for (const seen of ["failed,failed", "failed,failed,failed"]) {
      advanceClock(2, 1);
      await expect.poll(states, { message: `retried: ${seen}`, timeout: 30_000 }).toBe(seen);
    }
    await expect(page.locator("p.collection-method")).toHaveText("Sent for the customer to pay.");
    expect(await intentsAtStripe(page, id), "one intent per attempt").toHaveLength(3);
    await expect
      .poll(() => mailTo(email).filter((m) => m.includes("Subject: Invoice")).length, { message: "the invoice mailed once", timeout: 30_000 })
      .toBe(1);
    const mail = mailTo(email).find((m) => m.includes("Subject: Invoice"))!;
    expect(mail).toMatch(/\/i\/[0-9a-f]{64}/);
  });
  test("a schedule collected automatically issues its invoice and charges the saved card once", async ({ page, browser }) => {
    await signUp(page, "charge-schedule");
    const email = `schedule-${Date.now()}@example.com`;
    await savedMethod(page, browser, email, "Save card 4242 (succeeds)");
    await page.goto("/schedules/new");
    await hydrated(page);
    const form = page.locator("form.new-schedule");
    await form.locator('select[name="input[customer_id]"]').selectOption({ label: "Ada Lovelace" });
    await form.locator('input[name="input[lines][0][description]"]').fill("Monthly plan");
    await form.locator('input[name="input[lines][0][unit_amount]"]').fill("60.00");
    await form.locator('select[name="input[collection_method]"]').selectOption("charge_automatically");
    await form.locator('select[name="schedule[action]"]').selectOption("finalize");
    await form.locator("button.create-schedule").click();
    await expect(page).toHaveURL(/\/schedules\/[0-9a-f-]{36}$/);
    // Today's run is due now: a worker issues the invoice, and its first attempt charges the card.
    await expect
      .poll(async () => (await reloadAndRead(page, "table.runs tr.run.issued")).length, { message: "today's run issued", timeout: 30_000 })
      .toBe(1);
    await page.locator("table.runs tr.run.issued a").first().click();
    await expect(page).toHaveURL(INVOICE_URL);
    const id = page.url().split("/").pop()!;
    await expect
      .poll(async () => (await reloadAndRead(page, ".payment-state")).join(","), { message: "charged and paid", timeout: 60_000 })
      .toBe("paid");
    expect(await reloadAndRead(page, "tr.charge-attempt td.state")).toEqual(["succeeded"]);
    expect(await intentsAtStripe(page, id), "one charge at Stripe").toHaveLength(1);
  });
});

import { test, expect, Page } from "@playwright/test";
import { createHmac, randomUUID } from "node:crypto";
import { signUp, openForm, fillInvoice, submitButton, submitTwice, INVOICE_URL, hydrated } from "./helpers";

const DEV_SECRET = "whsec_dev_invoicer";

function signed(body: string): string {
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac("sha256", DEV_SECRET).update(`${t}.${body}`).digest("hex");
  return `t=${t},v1=${v1}`;
}

async function rowsOf(page: Page, surface: string) {
  await page.goto(`/activity?surface=${surface}`);
  return page.locator(`tr.attempt.${surface}`);
}

test("each surface's repeat shows once as won and once as replay; another org sees none of it", async ({
  page,
  request,
  browser,
}) => {
  await signUp(page, "activity");

  // Form: one rendered form submitted twice.
  await openForm(page);
  await fillInvoice(page, { customer: "Activity Customer" });
  await submitTwice(page, submitButton(page), "/rpc/create_invoice");
  await expect(page).toHaveURL(INVOICE_URL);
  const invoiceId = page.url().split("/").pop()!;

  // Webhook: the same signed event delivered twice (Stripe's retry), each freshly signed.
  const event = JSON.stringify({
    id: `evt_${randomUUID().replace(/-/g, "")}`,
    object: "event",
    type: "checkout.session.completed",
    data: {
      object: {
        object: "checkout.session",
        client_reference_id: invoiceId,
        amount_total: 37500,
        currency: "usd",
        payment_status: "paid",
        payment_intent: `pi_${randomUUID().replace(/-/g, "")}`,
      },
    },
  });
  for (const expected of ["ok", "already processed"]) {
    const res = await request.post("/webhooks/stripe", {
      data: event,
      headers: { "content-type": "application/json", "stripe-signature": signed(event) },
    });
    expect(res.status()).toBe(200);
    expect(await res.text()).toBe(expected);
  }

  // API: a key from the settings page, one Idempotency-Key twice.
  await page.goto("/settings/api-keys");
  await hydrated(page);
  await page.getByRole("button", { name: "Create key" }).click();
  const key = (await page.locator("code.key").textContent())!.trim();
  const body = {
    customer_name: "API Customer",
    customer_email: "api@example.com",
    currency: "usd",
    due_date: "2027-03-01",
    lines: [{ description: "Widget", quantity: 1, unit_amount_cents: 500 }],
  };
  for (let i = 0; i < 2; i++) {
    const res = await request.post("/api/v1/invoices", {
      data: body,
      headers: { authorization: `Bearer ${key}`, "idempotency-key": "activity-1" },
    });
    expect(res.status()).toBe(201);
  }

  // The form surface also holds the Create key form's attempt (won once).
  for (const [surface, won] of [["form", 2], ["webhook", 1], ["api", 1]] as const) {
    const rows = await rowsOf(page, surface);
    await expect(rows).toHaveCount(won + 1);
    await expect(page.locator(`tr.attempt.${surface}.won`)).toHaveCount(won);
    await expect(page.locator(`tr.attempt.${surface}.replay`)).toHaveCount(1);
  }
  // The webhook rows keep the payload; the API rows the stored response.
  await page.goto("/activity?surface=webhook");
  await expect(page.locator("tr.attempt.webhook.won pre")).toContainText("checkout.session.completed");
  await page.goto("/activity?q=activity-1");
  await expect(page.locator("tr.attempt")).toHaveCount(2);
  await expect(page.locator("tr.attempt.api.won pre")).toContainText("API Customer");
  await page.goto("/activity");
  await expect(page.locator("p.counters")).toContainText("2 form won");
  await expect(page.locator("p.counters")).toContainText("1 webhook replay");

  // The invoice tells its own story: created, replayed, paid.
  await page.goto(`/invoices/${invoiceId}`);
  await expect(page.locator("table.history tr.attempt")).toHaveCount(4);

  // Another org sees none of it.
  const other = await browser.newContext();
  const intruder = await other.newPage();
  await signUp(intruder, "activity-other");
  await intruder.goto("/activity");
  await expect(intruder.getByText("No attempts match.")).toBeVisible();
  await expect(intruder.locator("p.counters")).toContainText("nothing yet");
  await intruder.goto(`/activity?q=${invoiceId}`);
  await expect(intruder.locator("tr.attempt")).toHaveCount(0);
  await other.close();
});

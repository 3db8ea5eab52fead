import { test, expect } from "@playwright/test";
import { signUp, openForm, fillInvoice, submitButton, submitTwice, INVOICE_URL, hydrated, reloadAndRead } from "./helpers";

test("Send invoice submitted twice from one rendered page queues one email, shown as sent", async ({ page }) => {
  await signUp(page, "send");
  await openForm(page);
  await fillInvoice(page, { email: "customer@example.com" });
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);
  await hydrated(page);

  // A double click: both submits reach the server with the same key.
  const { bodies: sends, answers } = await submitTwice(page, page.locator("button.send"), "/rpc/send_invoice");
  expect(answers.map((a) => a.status)).toEqual([302, 302]);
  expect(new URLSearchParams(sends[0]).get("idempotency_key")).toBe(
    new URLSearchParams(sends[1]).get("idempotency_key"),
  );
  // The worker (inside the server) sends it to the SMTP sink within moments: one row, sent.
  await expect
    .poll(() => reloadAndRead(page, "tr.email .status"), { message: "one email, sent", timeout: 30_000 })
    .toEqual(["sent"]);
});

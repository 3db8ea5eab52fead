import { test, expect } from "@playwright/test";
import { signUp, openForm, fillInvoice, submitButton, INVOICE_URL, hydrated, reloadAndRead } from "./helpers";

test("Send invoice submitted twice from one rendered page queues one email, shown as sent", async ({ page }) => {
  await signUp(page, "send");
  await openForm(page);
  await fillInvoice(page, { email: "customer@example.com" });
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);
  await hydrated(page);

  const sends: string[] = [];
  page.on("request", (req) => {
    if (req.url().includes("/rpc/send_invoice")) sends.push(req.postData() ?? "");
  });
  const answers: number[] = [];
  page.on("response", (res) => {
    if (res.url().includes("/rpc/send_invoice")) answers.push(res.status());
  });
  // Two submits past the disabled button: both reach the server with the same key.
  await page
    .locator("form:has(button.send)")
    .evaluate((form: HTMLFormElement) => {
      form.requestSubmit();
      form.requestSubmit();
    });
  await expect.poll(() => answers.length).toBe(2);
  expect(sends.length).toBe(2);
  expect(new URLSearchParams(sends[0]).get("idempotency_key")).toBe(
    new URLSearchParams(sends[1]).get("idempotency_key"),
  );
  // The worker (inside the server) sends it to the SMTP sink within moments: one row, sent.
  await expect
    .poll(() => reloadAndRead(page, "tr.email .status"), { message: "one email, sent", timeout: 30_000 })
    .toEqual(["sent"]);
});

import { test, expect } from "@playwright/test";
import { signUp, openForm, fillInvoice, submitButton, INVOICE_URL, hydrated } from "./helpers";

test("Send invoice double-clicked queues one email, and the page shows it sent", async ({ page }) => {
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
  await page.getByRole("button", { name: "Send invoice to customer@example.com" }).dblclick();
  await expect(page.locator("tr.email")).toHaveCount(1);
  // The worker (inside the server, writing .eml files in dev) sends it within moments.
  await expect(async () => {
    await page.reload();
    await expect(page.locator("tr.email")).toHaveCount(1);
    await expect(page.locator("tr.email .status")).toHaveText("sent");
  }).toPass({ timeout: 15_000 });
  expect(sends.length).toBeGreaterThanOrEqual(1);
});

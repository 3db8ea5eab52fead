import { test, expect } from "@playwright/test";
import { signUp, openForm, fillInvoice, submitButton, INVOICE_URL, listRows } from "./helpers";

test("Simulate payment sends a signed event through the webhook and the invoice is paid", async ({ page }) => {
  await signUp(page, "pay");
  await openForm(page);
  await fillInvoice(page, { quantity: "2", price: "21.00" });
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);
  await expect(page.locator(".heading .status")).toHaveText("open");

  await page.getByRole("button", { name: "Simulate payment (dev)" }).click();
  await expect(page.locator(".heading .status")).toHaveText("paid");
  await expect(page.getByRole("button", { name: "Simulate payment (dev)" })).toHaveCount(0);
  // It went through the webhook route: the invoice's history holds the webhook's won attempt, with
  // the signed event it applied (a button that updated the invoice directly would have neither).
  const webhook = page.locator("table.history tr.attempt.webhook.won");
  await expect(webhook).toHaveCount(1);
  await expect(webhook.locator("pre")).toContainText("checkout.session.completed");

  const rows = await listRows(page);
  await expect(rows).toHaveCount(1);
  await expect(rows.first().locator(".status")).toHaveText("paid");
  await expect(rows.first()).toContainText("$42.00");
});

import { test, expect } from "@playwright/test";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { signUpAndCreateInvoice, listRows, unfold } from "./helpers";

test("Simulate payment sends a signed event through the webhook and the invoice is paid", async ({ page }) => {
  await signUpAndCreateInvoice(page, "pay", { quantity: "2", price: "21.00" });
  await expect(page.locator(".heading .status")).toHaveText("open");

  await unfold(page);
  await page.getByRole("button", { name: "Simulate payment (dev)" }).click();
  await expect(page.locator(".heading .status")).toHaveText("paid");
  await unfold(page);
  await expect(page.getByRole("button", { name: "Duplicate" })).toBeVisible();
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

/** `server stripe trigger ...` against this server, as a developer would run it. */
function trigger(...args: string[]) {
  const base = process.env.BASE_URL ?? "http://127.0.0.1:3000";
  const server = path.resolve(__dirname, "../../target/debug/server");
  return execFileSync(server, ["stripe", "trigger", ...args, "--url", `${base}/webhooks/stripe`], {
    env: { ...process.env, LEPTOS_ENV: "DEV", RUST_LOG: "warn" },
    encoding: "utf8",
  });
}

test("a delayed payment shows as processing and becomes paid when it succeeds", async ({ page }) => {
  await signUpAndCreateInvoice(page, "delayed", { quantity: "1", price: "30.00" });
  const invoice = page.url().split("/").pop()!;
  const pi = `pi_e2e_${Date.now()}`;

  trigger("checkout.session.completed", "--invoice", invoice, "--payment-status", "unpaid", "--payment-intent", pi);
  await page.reload();
  await expect(page.locator(".heading .status")).toHaveText("open");
  await expect(page.locator(".heading .payment-state")).toHaveText("payment processing");
  await expect(page.locator("table.payments tr.payment.pending")).toContainText("processing");
  await expect(page.locator("table.emails")).toHaveCount(0);

  trigger("checkout.session.async_payment_succeeded", "--invoice", invoice, "--payment-intent", pi);
  await page.reload();
  await expect(page.locator(".heading .status")).toHaveText("paid");
  await expect(page.locator(".heading .payment-state")).toHaveText("paid");
  await expect(page.locator("table.payments tr.payment.succeeded")).toContainText("$30.00");
});

import { test, expect } from "@playwright/test";
import { signUp, hydrated, MAIL_DIR } from "./helpers";

test("an API key is shown once, works with the API, and stops working when revoked", async ({ page, request }) => {
  await signUp(page, "keys");
  await page.goto("/settings/api-keys");
  await hydrated(page);
  await expect(page.getByText("No API keys yet.")).toBeVisible();
  await page.fill('input[name="name"]', "billing script");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = (await page.locator("code.key").textContent())!.trim();
  expect(key).toMatch(/^ik_[0-9a-f]{64}$/);
  const row = page.locator("tr.api-key");
  await expect(row).toHaveCount(1);
  await expect(row).toContainText("billing script");
  await expect(row).toContainText(key.slice(0, 11));

  // Shown once: a reload lists the prefix, never the key.
  await page.reload();
  await expect(page.locator("tr.api-key")).toContainText(key.slice(0, 11));
  expect(await page.content()).not.toContain(key);

  const body = {
    customer_name: "API Customer",
    customer_email: "api@example.com",
    currency: "usd",
    due_date: "2027-03-01",
    lines: [{ description: "Widget", quantity: 2, unit_amount_cents: 1999 }],
  };
  const headers = { authorization: `Bearer ${key}`, "idempotency-key": "e2e-1" };
  const created = await request.post("/api/v1/invoices", { data: body, headers });
  expect(created.status()).toBe(201);
  const replay = await request.post("/api/v1/invoices", { data: body, headers });
  expect(replay.headers()["idempotent-replayed"]).toBe("true");
  expect(await replay.text()).toBe(await created.text());
  await page.goto("/invoices");
  await expect(page.locator("tr.invoice-row")).toHaveCount(1);
  await expect(page.locator("tr.invoice-row")).toContainText("API Customer");

  await page.goto("/settings/api-keys");
  await hydrated(page);
  await page.getByRole("button", { name: "Revoke" }).click();
  await expect(page.locator("tr.api-key")).toContainText("revoked");
  const refused = await request.get("/api/v1/invoices", { headers: { authorization: `Bearer ${key}` } });
  expect(refused.status()).toBe(401);
});

test("a double-submitted Create key makes one key, shows it, and the audit log names who made it", async ({ page, request }) => {
  test.skip(!MAIL_DIR, "needs the SMTP sink of scripts/test (keys need a verified address)");
  const email = await signUp(page, "keys-twice");
  await page.goto("/settings/api-keys");
  await hydrated(page);
  const form = page.locator("form:has(button.primary)");
  await form.locator('input[name="name"]').fill("twice");
  const keys: string[] = [];
  const answers: number[] = [];
  page.on("request", (req) => {
    if (req.url().includes("/rpc/create_api_key")) keys.push(new URLSearchParams(req.postData() ?? "").get("idempotency_key") ?? "");
  });
  page.on("response", (res) => {
    if (res.url().includes("/rpc/create_api_key")) answers.push(res.status());
  });
  await form.evaluate((f: HTMLFormElement) => {
    f.requestSubmit();
    f.requestSubmit();
  });
  await expect.poll(() => answers.length).toBe(2);
  expect(keys[0]).toBe(keys[1]);
  expect(answers).toEqual([200, 200]);
  // One key, and the page still shows it once both answers are handled (the repeat's cannot carry
  // it): the button is enabled again when no submit is pending.
  await expect(page.getByRole("button", { name: "Create key" })).toBeEnabled();
  await expect(page.locator("tr.api-key")).toHaveCount(1);
  await expect(page.getByText("This form already created the key")).toHaveCount(0);
  const key = (await page.locator("code.key").textContent())!.trim();
  expect(key).toMatch(/^ik_[0-9a-f]{64}$/);
  const listed = await request.get("/api/v1/invoices", { headers: { authorization: `Bearer ${key}` } });
  expect(listed.status()).toBe(200);
  // The next submit is a new rendered form: a second key.
  await form.locator('input[name="name"]').fill("second");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.locator("tr.api-key")).toHaveCount(2);

  const first = page.locator("tr.api-key", { has: page.locator("td", { hasText: /^twice$/ }) });
  await first.getByRole("button", { name: "Revoke" }).click();
  await expect(first).toContainText("revoked");
  await page.goto("/settings/audit");
  const rows = page.locator("tr.audit-row");
  await expect(rows.filter({ hasText: "api_key.created" })).toHaveCount(2);
  await expect(rows.filter({ hasText: "api_key.created" }).filter({ hasText: key.slice(0, 11) })).toContainText(email);
  await expect(rows.filter({ hasText: "api_key.revoked" })).toHaveCount(1);
  await expect(rows.filter({ hasText: "api_key.revoked" })).toContainText(email);
  await expect(rows.filter({ hasText: "api_key.revoked" })).toContainText(key.slice(0, 11));
});

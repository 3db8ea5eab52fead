import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { hydrated, MAIL_DIR, mailTo, reloadAndRead, signUp, submitTwice } from "./helpers";

async function noAxeViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

/** `server admin advance-clock` on this server's database (dev only): the scheduler's time passes. */
function advanceClock(days: number, hours: number) {
  const server = path.resolve(__dirname, "../../target/debug/server");
  execFileSync(server, ["admin", "advance-clock", "--days", `${days}`, "--hours", `${hours}`], {
    env: { ...process.env, LEPTOS_ENV: "DEV", RUST_LOG: "warn" },
    encoding: "utf8",
  });
}

test("a monthly schedule submitted twice is one; time runs forward: its invoices and reminders are mailed", async ({ page }) => {
  test.skip(!MAIL_DIR, "needs the SMTP sink of scripts/test");
  await signUp(page, "recurring");
  const customer = `retainer-${Date.now()}@example.com`;

  // Reminders a week after the due date.
  await page.goto("/settings/org");
  await hydrated(page);
  const reminders = page.locator("form.reminders");
  await reminders.locator('input[name="steps[0][offset_days]"]').fill("7");
  await reminders.locator('input[name="steps[0][message]"]').fill("A friendly reminder: this is now a week late.");
  await reminders.locator("button.save-reminders").click();
  await expect(page.locator("p.saved")).toHaveText("Reminders saved.");

  await page.goto("/schedules/new");
  await hydrated(page);
  await noAxeViolations(page);
  const form = page.locator("form.new-schedule");
  await form.locator('input[name="input[customer_name]"]').fill("Retainer Co");
  await form.locator('input[name="input[customer_email]"]').fill(customer);
  await form.locator('input[name="input[lines][0][description]"]').fill("Monthly retainer");
  await form.locator('input[name="input[lines][0][unit_amount]"]').fill("250.00");
  await form.locator('select[name="schedule[action]"]').selectOption("send");
  await submitTwice(page, form.locator("button.create-schedule"), "/rpc/create_schedule");
  await expect(page).toHaveURL(/\/schedules\/[0-9a-f-]{36}$/);
  const schedulePage = page.url();
  await page.goto("/schedules");
  await expect(page.locator("tr.schedule-row")).toHaveCount(1);
  await noAxeViolations(page);

  // Today's run is due now: a worker issues and mails it.
  await page.goto(schedulePage);
  await expect
    .poll(async () => (await reloadAndRead(page, "table.runs tr.run.issued")).length, { message: "today's run issued", timeout: 30_000 })
    .toBe(1);
  await noAxeViolations(page);
  await expect
    .poll(() => mailTo(customer).filter((m) => m.includes("Subject: Invoice")).length, { message: "its invoice mailed", timeout: 30_000 })
    .toBe(1);

  // Edit the invoice (a double submit saves once): the next run issues the new price.
  await page.goto(`${schedulePage}/edit`);
  await hydrated(page);
  await noAxeViolations(page);
  const edit = page.locator("form.edit-schedule-form");
  await expect(edit.locator('input[name="input[due_date]"]')).toHaveCount(0);
  await edit.locator('input[name="input[lines][0][unit_amount]"]').fill("300.00");
  await submitTwice(page, edit.locator("button.save"), "/rpc/update_schedule");
  await expect(page).toHaveURL(schedulePage);

  // A month (and a few hours, to land past 09:00) later: the next period's invoice, and the
  // first invoice's reminder a week after its due date.
  const hours = (12 - new Date().getUTCHours() + 24) % 24;
  advanceClock(31, hours);
  await expect
    .poll(async () => (await reloadAndRead(page, "table.runs tr.run.issued")).length, { message: "the next period issued", timeout: 30_000 })
    .toBe(2);
  const mailedKinds = () => {
    const mails = mailTo(customer);
    return [
      mails.filter((m) => m.includes("Subject: Invoice")).length,
      Math.min(mails.filter((m) => m.includes("Subject: Reminder")).length, 1),
    ];
  };
  await expect
    .poll(mailedKinds, { message: "two invoices and a reminder mailed", timeout: 30_000 })
    .toEqual([2, 1]);
  // The first run's invoice kept its price; the second has the edited one.
  await page.goto("/invoices");
  await expect(page.locator("tbody tr").filter({ hasText: "$250.00" })).toHaveCount(1);
  await expect(page.locator("tbody tr").filter({ hasText: "$300.00" })).toHaveCount(1);
  // Each invoice reminded once, however many rounds the workers ran.
  const reminders_sent = mailTo(customer).filter((m) => m.includes("Subject: Reminder"));
  const numbers = reminders_sent.map((m) => m.match(/Subject: Reminder: invoice (\S+)/)![1]);
  expect(new Set(numbers).size).toBe(numbers.length);
});

import { test, expect, Page } from "@playwright/test";
import { hydrated, INVOICE_URL, MAIL_DIR, mailTo, signUp, submitAndLoad, uniqueEmail, unfold } from "./helpers";

// Every action of the owner's pages, once with JavaScript on and once with it off: each is a plain
// form the server answers with the next page (or, on an island's page, a form that works as one
// without script), and each shows its result. Behaviour kept in both worlds is what this walk checks;
// the double-submit and crash cases of each surface are their own specs.

/** Posts the form of `button` and waits for the page the server answers with. */
async function press(page: Page, button: ReturnType<Page["locator"]>): Promise<void> {
  await submitAndLoad(page, button);
}

/** Opens `path` and, with script, waits for its islands. */
async function open(page: Page, path: string, js: boolean): Promise<void> {
  await page.goto(path);
  if (js) await hydrated(page);
}

for (const js of [true, false]) {
  test.describe(`JavaScript ${js ? "on" : "off"}`, () => {
    test.use({ javaScriptEnabled: js, actionTimeout: 15_000 });

    test(`every owner page's actions, JavaScript ${js ? "on" : "off"}`, async ({ page }) => {
      // The invitation step reads the mail it sends: scripts/test always runs the SMTP sink.
      expect(MAIL_DIR, "the SMTP sink of scripts/test (E2E_MAIL_DIR)").toBeTruthy();
      test.setTimeout(240_000);
      await signUp(page, js ? "walk-js" : "walk-nojs");

      await test.step("customers: create, new statement link, archive, unarchive, reminders stopped and restarted", async () => {
        await open(page, "/customers/new", js);
        await page.fill('input[name="input[name]"]', "Walk Customer");
        await page.fill('input[name="input[email]"]', "walk@example.com");
        await press(page, page.getByRole("button", { name: "Create customer" }));
        await expect(page.locator("h1.customer-name")).toHaveText("Walk Customer");
        const before = await page.locator("a.public-statement").textContent();
        await press(page, page.locator("button.action.new_link"));
        await expect(page.locator("a.public-statement")).not.toHaveText(before!);
        await press(page, page.locator("button.action.archive"));
        await expect(page.locator("p.notice.archived")).toBeVisible();
        await press(page, page.locator("button.action.unarchive"));
        await expect(page.locator("p.notice.archived")).toHaveCount(0);
        await press(page, page.getByRole("button", { name: "Stop reminders" }));
        await expect(page.locator(".reminders-state")).toHaveText("Payment reminders: off.");
        await press(page, page.getByRole("button", { name: "Send reminders again" }));
        await expect(page.locator(".reminders-state")).toHaveText("Payment reminders: on.");
      });

      await test.step("settings: save settings, bank details, a tax rate added and archived, reminders", async () => {
        await open(page, "/settings/org", js);
        // Refused: the page comes back with the message and what was typed, the rest kept.
        await page.fill('input[name="settings[number_format]"]', "WALK-{seq:4}");
        await page.fill('input[name="settings[time_zone]"]', "Mars/Olympus");
        await press(page, page.locator("button.save-settings"));
        await expect(page.locator('input[name="settings[time_zone]"] ~ .error')).toBeVisible();
        await expect(page.locator('input[name="settings[time_zone]"]')).toHaveValue("Mars/Olympus");
        await expect(page.locator('input[name="settings[number_format]"]')).toHaveValue("WALK-{seq:4}");
        await page.fill('input[name="settings[time_zone]"]', "Europe/Amsterdam");
        await press(page, page.locator("button.save-settings"));
        await expect(page.locator('input[name="settings[number_format]"]')).toHaveValue("WALK-{seq:4}");
        await expect(page.locator('input[name="settings[time_zone]"]')).toHaveValue("Europe/Amsterdam");
        const bank = page.locator("form.bank-details");
        await bank.locator('input[name="bank[holder]"]').fill("Walk B.V.");
        await bank.locator('input[name="bank[iban]"]').fill("NL91ABNA0417164300");
        await press(page, bank.locator("button.save-bank"));
        await expect(page.locator('form.bank-details input[name="bank[iban]"]')).toHaveValue("NL91 ABNA 0417 1643 00");
        await page.fill('input[name="name"]', "VAT");
        await page.fill('input[name="percent"]', "twenty-one");
        await press(page, page.locator("button.add-tax-rate"));
        await expect(page.locator('input[name="percent"] ~ .error')).toBeVisible();
        await expect(page.locator('input[name="name"]')).toHaveValue("VAT");
        await expect(page.locator('input[name="percent"]')).toHaveValue("twenty-one");
        await page.fill('input[name="percent"]', "21");
        await press(page, page.locator("button.add-tax-rate"));
        await expect(page.locator("tr.tax-rate", { hasText: "VAT" })).toContainText("21%");
        await press(page, page.locator("tr.tax-rate button.archive"));
        await expect(page.locator("tr.tax-rate .status")).toHaveText("archived");
        const reminders = page.locator("form.reminders");
        await reminders.locator('input[name="steps[0][offset_days]"]').fill("7");
        await reminders.locator('input[name="steps[0][message]"]').fill("A week late.");
        await press(page, reminders.locator("button.save-reminders"));
        await expect(page.locator("p.saved")).toHaveText("Reminders saved.");
      });

      let invoice = "";
      await test.step("an invoice: drafted, edited, finalized, a payment recorded and deleted, sent, a new link", async () => {
        await open(page, "/invoices/new", js);
        await page.selectOption('select[name="input[customer_id]"]', { label: "Walk Customer <walk@example.com>" });
        await page.fill('input[name="input[due_date]"]', "2027-01-31");
        await page.fill('input[name="input[lines][0][description]"]', "Walking");
        await page.fill('input[name="input[lines][0][quantity]"]', "2");
        await page.fill('input[name="input[lines][0][unit_amount]"]', "50.00");
        await press(page, page.getByRole("button", { name: "Save draft" }));
        await expect(page).toHaveURL(INVOICE_URL);
        invoice = page.url();
        await expect(page.locator(".heading .status")).toHaveText("draft");
        await page.locator("a.button.edit").click();
        await expect(page).toHaveURL(/\/edit$/);
        if (js) await hydrated(page);
        await page.fill('input[name="input[lines][0][description]"]', "Walking, edited");
        await press(page, page.locator("button.save"));
        await expect(page).toHaveURL(invoice);
        await expect(page.locator("main")).toContainText("Walking, edited");
        await press(page, page.locator("button.finalize"));
        await expect(page.locator(".heading .status")).toHaveText("open");
        await unfold(page, "record");
        const record = page.locator("form.record-payment");
        await record.locator('input[name="form[amount]"]').fill("40.00");
        await record.locator('select[name="form[method]"]').selectOption("cash");
        await press(page, record.locator("button.record"));
        await expect(page.locator(".heading .payment-state")).toHaveText("partially paid");
        await press(page, page.locator("table.payments button.delete-payment"));
        await expect(page.locator(".heading .payment-state")).toHaveText("unpaid");
        await press(page, page.locator("button.send"));
        await expect(page.locator("table.emails tr.email")).toHaveCount(1);
        const link = await page.locator("p.public-link a").first().textContent();
        await unfold(page);
        await press(page, page.locator("button.action.new_link"));
        await expect(page.locator("p.public-link a").first()).not.toHaveText(link!);
      });

      await test.step("a duplicate: drafted, deleted; another finalized, marked uncollectible, voided", async () => {
        await unfold(page);
        await press(page, page.locator("button.action.duplicate"));
        await expect(page.locator(".heading .status")).toHaveText("draft");
        expect(page.url()).not.toBe(invoice);
        const copy = new URL(page.url()).pathname;
        await unfold(page);
        await press(page, page.locator("button.action.delete"));
        await expect(page).toHaveURL(/\/invoices$/);
        await expect(page.locator(`a[href="${copy}"]`)).toHaveCount(0);
        await expect(page.locator("tr.invoice-row")).toHaveCount(1);
        await page.goto(invoice);
        await unfold(page);
        await press(page, page.locator("button.action.duplicate"));
        await press(page, page.locator("button.finalize"));
        await unfold(page);
        await press(page, page.locator("button.action.mark_uncollectible"));
        await expect(page.locator(".heading .status")).toHaveText("uncollectible");
        await unfold(page);
        await press(page, page.locator("button.action.void"));
        await expect(page.locator(".heading .status")).toHaveText("void");
      });

      await test.step("a credit note on the first invoice", async () => {
        await page.goto(invoice);
        await unfold(page, "credit");
        const credit = page.locator("form.credit-invoice");
        await credit.locator('input[name="reason"]').fill("Walked back");
        await credit.locator('select[name="refund"]').selectOption("none");
        await press(page, credit.locator("button.credit"));
        await expect(page.locator("table.credit-notes tr.credit-note")).toHaveCount(1);
      });

      await test.step("a quote: drafted, opened and sent", async () => {
        await open(page, "/quotes/new", js);
        await page.fill('input[name="input[customer_name]"]', "Quote Walker");
        await page.fill('input[name="input[customer_email]"]', uniqueEmail("walk-quote"));
        await page.fill('input[name="input[due_date]"]', "2027-06-30");
        await page.fill('input[name="input[lines][0][description]"]', "Plan");
        await page.fill('input[name="input[lines][0][quantity]"]', "1");
        await page.fill('input[name="input[lines][0][unit_amount]"]', "300.00");
        await press(page, page.locator("button.save-draft"));
        await expect(page).toHaveURL(/\/quotes\/[0-9a-f-]{36}$/);
        await expect(page.locator(".quote .status")).toHaveText("Draft");
        await press(page, page.getByRole("button", { name: "Open and send" }));
        await expect(page.locator(".quote .status")).toHaveText("Open");
      });

      await test.step("a schedule: created, paused, resumed", async () => {
        await open(page, "/schedules/new", js);
        const form = page.locator("form.new-schedule");
        await form.locator('input[name="input[customer_name]"]').fill("Schedule Walker");
        await form.locator('input[name="input[customer_email]"]').fill(uniqueEmail("walk-schedule"));
        await form.locator('input[name="input[lines][0][description]"]').fill("Monthly walk");
        await form.locator('input[name="input[lines][0][unit_amount]"]').fill("25.00");
        await press(page, form.locator("button.create-schedule"));
        await expect(page).toHaveURL(/\/schedules\/[0-9a-f-]{36}$/);
        await press(page, page.getByRole("button", { name: "Pause" }));
        await expect(page.getByRole("button", { name: "Resume" })).toBeVisible();
        await press(page, page.getByRole("button", { name: "Resume" }));
        await expect(page.getByRole("button", { name: "Pause" })).toBeVisible();
      });

      await test.step("API keys: made and shown once with script; said to need it without", async () => {
        await open(page, "/settings/api-keys", js);
        if (js) {
          await page.fill('input[name="name"]', "walk");
          await page.getByRole("button", { name: "Create key" }).click();
          await expect(page.locator("code.key")).toHaveText(/^ik_[0-9a-f]{64}$/);
          await expect(page.locator("tr.api-key")).toHaveCount(1);
          await page.getByRole("button", { name: "Revoke" }).click();
          await expect(page.locator("tr.api-key .status")).toHaveText("revoked");
        } else {
          await expect(page.locator("p.hint", { hasText: "Creating a key needs JavaScript" })).toBeVisible();
        }
      });

      await test.step("webhooks: an endpoint added, its secret rotated, deleted", async () => {
        await open(page, "/settings/webhooks", js);
        await page.fill('input[name="url"]', "http://127.0.0.1:9/walk");
        await page.fill('input[name="description"]', "walked");
        // Refused (no event chosen): back with what was typed.
        await press(page, page.getByRole("button", { name: "Add endpoint" }));
        await expect(page.locator("form.webhook-form .error")).toHaveText("Choose at least one event.");
        await expect(page.locator('input[name="url"]')).toHaveValue("http://127.0.0.1:9/walk");
        await expect(page.locator('input[name="description"]')).toHaveValue("walked");
        await page.getByLabel("customer.created").check();
        await press(page, page.getByRole("button", { name: "Add endpoint" }));
        await page.locator("a", { hasText: "http://127.0.0.1:9/walk" }).click();
        const secret = await page.locator("code.secret").textContent();
        await press(page, page.getByRole("button", { name: "Rotate secret" }));
        await expect(page.locator("code.secret")).not.toHaveText(secret!);
        await press(page, page.getByRole("button", { name: "Delete endpoint" }));
        await expect(page.locator("p.empty")).toHaveText("No endpoints yet.");
      });

      await test.step("members: an invitation sent, resent, revoked", async () => {
        await open(page, "/settings/members", js);
        const invitee = uniqueEmail("walk-invitee");
        const form = page.locator("form:has(button.send-invitation)");
        await form.locator('input[name="email"]').fill(invitee);
        await form.locator('select[name="role"]').selectOption("member");
        await press(page, form.locator("button.send-invitation"));
        const row = page.locator(`tr.invitation[data-email="${invitee}"]`);
        await expect(row).toHaveCount(1);
        await expect.poll(() => mailTo(invitee).length, { message: "the invitation mailed" }).toBe(1);
        await press(page, row.locator("button.resend"));
        await expect.poll(() => mailTo(invitee).length, { message: "mailed again" }).toBe(2);
        await expect(row.locator(".status")).toHaveText("open");
        await press(page, row.locator("button.revoke"));
        await expect(row.locator(".status")).toHaveText("revoked");
      });

      await test.step("reports and lists: filters and periods are GET forms", async () => {
        await open(page, "/invoices", js);
        await page.selectOption('select[name="status"]', "void");
        await press(page, page.getByRole("button", { name: "Filter" }));
        await expect(page).toHaveURL(/status=void/);
        await expect(page.locator("tr.invoice-row")).toHaveCount(1);
        await open(page, "/reports/tax", js);
        await press(page, page.getByRole("button", { name: "Show" }));
        await expect(page).toHaveURL(/\/reports\/tax\?/);
        await open(page, "/activity", js);
        await press(page, page.getByRole("button", { name: "Filter" }));
        await expect(page).toHaveURL(/\/activity\?/);
      });

      await test.step("sessions: every other one ended; logged out", async () => {
        await open(page, "/settings/sessions", js);
        await press(page, page.locator("button.end-others"));
        await expect(page).toHaveURL(/\/settings\/sessions/);
        await press(page, page.getByRole("button", { name: "Log out" }));
        await expect(page).toHaveURL(/\/login$/);
      });
    });
  });
}

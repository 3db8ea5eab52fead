-- Payment reminders: an org's steps relative to an invoice's due date (-3: three days before, 7: a
-- week after), each with its message. A reminder is sent at most once per (invoice, step): its row
-- is written with its outbox email, in the transaction that claims (job, reminder:<invoice>, <step>),
-- only while the invoice is open and not fully paid (under the invoice's row lock, so a payment is
-- either before it, and nothing is sent, or after its commit). A step missed while no worker ran is
-- sent late once, or skipped when a later step is already due.
create table reminder_steps (
    org_id uuid not null references orgs (id) on delete cascade,
    offset_days integer not null check (offset_days between -60 and 365),
    message text not null check (length(message) between 1 and 2000),
    primary key (org_id, offset_days)
);

alter table customers add column reminders_off boolean not null default false;
alter table invoices add column reminders_off boolean not null default false;

create table reminders (
    invoice_id uuid not null references invoices (id) on delete cascade,
    offset_days integer not null,
    org_id uuid not null references orgs (id) on delete cascade,
    outcome text not null check (outcome in ('sent', 'skipped')),
    outbox_id uuid,
    created_at timestamptz not null default clock_timestamp(),
    primary key (invoice_id, offset_days)
);

-- An org's emails of the last hour (the reminders' allowance).
create index outbox_org_created_idx on outbox (org_id, created_at);

-- What the reminder run scans: open invoices by due date.
create index invoices_open_due_idx on invoices (due_date) where status = 'open' and not reminders_off;

alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund', 'reminder'));

-- Dev only (`server admin advance-clock`, refused outside LEPTOS_ENV=DEV): how far the scheduler's
-- clock runs ahead, read by dev-mode workers each round, so a test or a demo can let time pass.
create table dev_clock (
    id boolean primary key default true check (id),
    offset_secs bigint not null
);

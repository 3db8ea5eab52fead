-- Recurring invoices and reminders: the jobs surface. A schedule runs on dates in its org's time
-- zone; each run is named by its date (the period) and claimed as (job, schedule:<id>, <period>) in
-- the transaction that issues its invoice, whose source_key is schedule:<id>:<period> under the
-- invoices' UNIQUE (org_id, source_key). A reminder is one row per (invoice, step), written with its
-- outbox email.
create table schedules (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    -- The invoice every run issues (an InvoiceInput as JSON: customer, lines, taxes, discount, notes,
    -- terms, currency). Editing it changes later runs only.
    template jsonb not null,
    interval text not null check (interval in ('week', 'month', 'year')),
    interval_count integer not null check (interval_count between 1 and 52),
    start_date date not null,
    -- Monthly and yearly: 1 to 31 (in a shorter month its last day), 0 the last day; null the start's.
    day_of_month smallint check (day_of_month between 0 and 31),
    end_after_count integer check (end_after_count between 1 and 1000),
    end_date date,
    action text not null check (action in ('draft', 'finalize', 'send')),
    missed text not null check (missed in ('each', 'latest')),
    -- The next run: its index (0: the first) and its date; null once the schedule has ended.
    next_index integer not null default 0,
    next_run_on date,
    paused_at timestamptz,
    -- The attempt that created it (form:<key>, api:<key id>/<key>).
    source_key text not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint schedules_org_source_key unique (org_id, source_key)
);
create index schedules_org_idx on schedules (org_id, created_at desc, id desc);
-- What the scheduler scans: schedules with a next run, not paused.
create index schedules_due_idx on schedules (next_run_on) where paused_at is null and next_run_on is not null;

-- Each period a schedule handled: the invoice it issued, or skipped (missed: latest).
create table schedule_runs (
    schedule_id uuid not null references schedules (id) on delete cascade,
    period date not null,
    run_index integer not null,
    invoice_id uuid references invoices (id) on delete set null,
    outcome text not null check (outcome in ('issued', 'skipped')),
    ran_at timestamptz not null default now(),
    primary key (schedule_id, period)
);

-- A schedule's runs (and later the other jobs') show on the activity page.
alter table attempts drop constraint attempts_surface_check;
alter table attempts add constraint attempts_surface_check
    check (surface in ('form', 'webhook', 'api', 'job'));

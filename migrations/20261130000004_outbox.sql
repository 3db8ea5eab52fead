-- Work that leaves the database (email) is written here in the same transaction as the business
-- change that causes it, and drained by workers. The row id is the job's stable run id: the email's
-- Message-ID and the idempotency key of any downstream call. A worker's lease on a row is the
-- three-state claim ('job', 'outbox', id) in `claims` (in progress with locked_until, then done).
create table outbox (
    id uuid primary key,
    org_id uuid references orgs (id) on delete cascade,
    invoice_id uuid references invoices (id) on delete cascade,
    kind text not null check (kind in ('invoice_email', 'payment_receipt')),
    payload jsonb not null,
    attempts integer not null default 0,
    max_attempts integer not null default 8 check (max_attempts > 0),
    next_attempt_at timestamptz not null default now(),
    locked_by text,
    sent_at timestamptz,
    dead_at timestamptz,
    last_error text,
    created_at timestamptz not null default now()
);
create index outbox_due_idx on outbox (next_attempt_at) where sent_at is null and dead_at is null;
create index outbox_invoice_idx on outbox (invoice_id, created_at);

-- Wake the workers when work is committed (NOTIFY is delivered at commit, never for a rollback).
create function outbox_notify() returns trigger language plpgsql as $$
begin
    perform pg_notify('outbox', '');
    return null;
end;
$$;
create trigger outbox_notify after insert on outbox for each statement execute function outbox_notify();

-- A receipt is sent once per payment, whatever produced it.
create unique index outbox_receipt_once on outbox ((payload ->> 'payment_id')) where kind = 'payment_receipt';

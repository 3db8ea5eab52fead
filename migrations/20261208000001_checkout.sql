-- Checkout sessions the app created at Stripe, one per invoice and amount due while it is open. A
-- checkout event is applied only when its session is one of these, for the same invoice, org, mode and
-- currency. The call out to Stripe is claimed with a lease under the new 'outbound' scope.

alter table claims drop constraint claims_scope_check;
alter table claims add constraint claims_scope_check
    check (scope in ('form', 'webhook', 'api', 'job', 'outbound'));

create table checkout_sessions (
    -- Stripe's id (cs_...).
    id text primary key check (length(id) between 1 and 255),
    org_id uuid not null references orgs (id) on delete cascade,
    invoice_id uuid not null references invoices (id) on delete cascade,
    amount_cents bigint not null check (amount_cents > 0),
    currency text not null,
    livemode boolean not null,
    url text not null check (length(url) <= 5000),
    expires_at timestamptz not null,
    -- The Idempotency-Key the app sent to Stripe: one per (invoice, amount due, generation).
    idempotency_key text not null unique,
    -- Made by the development Simulate button or `server stripe trigger`, not by a call to Stripe.
    simulated boolean not null default false,
    -- Its first checkout event arrived: paid, or a delayed payment under way or failed. It is not
    -- offered again; the next Pay makes a new session.
    completed_at timestamptz,
    created_at timestamptz not null default now()
);
create index checkout_sessions_invoice_idx on checkout_sessions (invoice_id, amount_cents, created_at desc);

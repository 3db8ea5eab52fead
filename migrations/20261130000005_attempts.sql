-- Every attempt on every surface, with its outcome: what the activity page shows. Written after the
-- attempt's outcome is known (a won attempt's work is already committed by then); rows of refused
-- requests whose org is unknown (bad webhook signatures) carry no org and appear on no page.
create table attempts (
    id bigint generated always as identity primary key,
    org_id uuid references orgs (id) on delete cascade,
    surface text not null check (surface in ('form', 'webhook', 'api')),
    owner text not null,
    key text not null,
    outcome text not null check (outcome in ('won', 'replay', 'in_flight', 'mismatch', 'rejected', 'failed')),
    invoice_id uuid references invoices (id) on delete set null,
    request_id text,
    duration_ms double precision not null,
    created_at timestamptz not null default now()
);
create index attempts_org_created_idx on attempts (org_id, created_at desc, id desc);
create index attempts_invoice_idx on attempts (invoice_id, created_at);

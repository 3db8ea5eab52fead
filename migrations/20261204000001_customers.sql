-- Customers: an org's own, picked on invoices (their billing details are copied onto an invoice when
-- it is finalized, so a finalized invoice never changes with the customer record).
create table customers (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    name text not null check (length(name) between 1 and 200),
    email text not null check (length(email) between 3 and 254),
    billing_address text not null default '' check (length(billing_address) <= 1000),
    tax_id text check (length(tax_id) <= 50),
    notes text not null default '' check (length(notes) <= 2000),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create index customers_org_created_idx on customers (org_id, created_at desc, id desc);
-- Search by the start of a name or an email, case-insensitively, from an index.
create index customers_org_name_idx on customers (org_id, lower(name) text_pattern_ops);
create index customers_org_email_idx on customers (org_id, lower(email) text_pattern_ops);

-- Orgs, users and who belongs where.
create table orgs (
    id uuid primary key,
    name text not null check (length(name) between 1 and 200),
    -- Last invoice number handed out. Bumped in the same transaction as the invoice insert, so a
    -- rolled-back attempt gives its number back: numbers are gapless on success.
    invoice_seq integer not null default 0,
    created_at timestamptz not null default now()
);

create table users (
    id uuid primary key,
    email text not null check (length(email) between 3 and 254),
    password_hash text not null,
    created_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));

create table memberships (
    user_id uuid not null references users (id) on delete cascade,
    org_id uuid not null references orgs (id) on delete cascade,
    role text not null check (role in ('owner', 'member')),
    created_at timestamptz not null default now(),
    primary key (user_id, org_id)
);
create index memberships_org_idx on memberships (org_id);

create table invoices (
    id uuid primary key,
    org_id uuid not null references orgs (id),
    number integer not null check (number > 0),
    customer_name text not null check (length(customer_name) between 1 and 200),
    customer_email text not null,
    currency text not null check (currency ~ '^[a-z]{3}$'),
    due_date date not null,
    status text not null default 'open' check (status in ('open', 'paid', 'void', 'refunded')),
    total_cents bigint not null check (total_cents >= 0),
    amount_paid_cents bigint not null default 0 check (amount_paid_cents >= 0),
    -- The attempt that created this invoice ('form:<uuid>'), unique per org: a second line of defence
    -- behind the claims table, so even a lost claim row cannot produce a duplicate.
    source_key text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint invoices_org_number_key unique (org_id, number),
    constraint invoices_org_source_key unique (org_id, source_key)
);
create index invoices_org_created_idx on invoices (org_id, created_at desc, number desc);

create table invoice_lines (
    invoice_id uuid not null references invoices (id) on delete cascade,
    position smallint not null check (position between 1 and 100),
    description text not null check (length(description) between 1 and 500),
    quantity integer not null check (quantity between 1 and 1000000),
    unit_amount_cents bigint not null check (unit_amount_cents between 0 and 100000000),
    primary key (invoice_id, position)
);

-- One row per attempt, for every surface. The primary key is the whole discipline:
--   form   (org id,            form uuid)
--   stripe (stripe account,    event id)
--   api    (api client id,     Idempotency-Key)
--   job    (queue name,        run id)
-- Single-transaction surfaces insert and complete the row in the transaction that does the work, so
-- other transactions only ever see 'done'. Work that leaves the database commits 'in_progress' with a
-- lease (locked_until) first; a stale lease may be taken over.
create table claims (
    scope text not null check (scope in ('form', 'stripe', 'api', 'job')),
    owner text not null check (length(owner) between 1 and 255),
    key text not null check (length(key) between 1 and 255),
    status text not null default 'in_progress' check (status in ('in_progress', 'done')),
    -- Hash of what was asked (API: method + path + canonical body), to refuse a reused key.
    fingerprint bytea,
    -- What the first attempt produced: the invoice id, the payment id, ...
    result_id uuid,
    -- The stored response, replayed byte for byte (API).
    response_status smallint,
    response_headers jsonb,
    response_body bytea,
    claimed_at timestamptz not null default now(),
    locked_until timestamptz,
    completed_at timestamptz,
    created_at timestamptz not null default now(),
    primary key (scope, owner, key),
    constraint claims_done_has_completed_at check (status <> 'done' or completed_at is not null)
);
create index claims_scope_created_idx on claims (scope, created_at);

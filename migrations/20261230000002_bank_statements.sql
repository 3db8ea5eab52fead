-- Bank statements in, each entry recorded once, credits matched to invoices.

-- The org's accounts beyond its bank_iban: statements for any of them are taken.
alter table orgs
    add column bank_accounts text[] not null default '{}'
        check (cardinality(bank_accounts) <= 20);

-- One import of a file (CAMT.053, CAMT.054 or MT940): what it held and what was new.
create table bank_statements (
    id uuid primary key,
    org_id uuid not null references orgs (id),
    format text not null check (format in ('camt.053', 'camt.054', 'mt940')),
    account_iban text not null,
    entries integer not null,
    new_entries integer not null,
    matched integer not null,
    created_at timestamptz not null default now()
);
create index bank_statements_org_idx on bank_statements (org_id, created_at desc);

-- An entry of an account, once whatever imports it: its identity is the bank's own reference, or a
-- digest of what it says and its place among the identical entries of its day (bank::Entry::key).
create table bank_entries (
    id uuid primary key,
    org_id uuid not null references orgs (id),
    account text not null,
    entry_key text not null,
    statement_id uuid not null references bank_statements (id),
    booked_on date not null,
    amount_cents bigint not null check (amount_cents <> 0),
    currency text not null check (currency ~ '^[A-Z]{3}$'),
    counterparty text not null default '' check (length(counterparty) <= 1000),
    remittance text not null default '' check (length(remittance) <= 1000),
    bank_reference text check (length(bank_reference) <= 1000),
    state text not null default 'unmatched' check (state in ('unmatched', 'matched', 'ignored')),
    invoice_id uuid references invoices (id),
    created_at timestamptz not null default now(),
    constraint bank_entries_identity unique (org_id, account, entry_key),
    check ((state = 'matched') = (invoice_id is not null))
);
create index bank_entries_state_idx on bank_entries (org_id, state, booked_on desc, id);

-- A matched credit is a payment of provider 'bank' whose business key is the entry: a re-match of
-- the entry is a no-op (payments_provider_payment_key). Like a payment recorded by hand it has a
-- method and a date (the booking date).
alter table payments drop constraint payments_manual_check;
alter table payments add constraint payments_manual_check
    check ((provider in ('manual', 'bank')) = (method is not null and paid_on is not null));

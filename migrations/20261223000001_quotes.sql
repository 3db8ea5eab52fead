-- Quotes (estimates): drafted like an invoice (an InvoiceInput as JSON), numbered in their own series
-- once open, shown to the customer at /q/{token}, and accepted or declined there once. Accepting
-- makes the invoice whose source_key is quote:<id>, under the invoices' UNIQUE (org_id, source_key),
-- in the transaction that moves the quote from open to accepted.
create table quote_counters (
    org_id uuid primary key references orgs (id) on delete cascade,
    last_number integer not null check (last_number > 0)
);

create table quotes (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    -- 'expired' is not stored: an open quote past expires_on (in the org's zone) is expired.
    status text not null check (status in ('draft', 'open', 'accepted', 'declined')),
    number integer,
    number_text text,
    public_token text unique,
    template jsonb not null,
    customer_id uuid references customers (id) on delete set null,
    customer_name text not null,
    customer_email text not null,
    currency text not null,
    total_cents bigint not null check (total_cents >= 0),
    expires_on date not null,
    -- What accepting does with the invoice: leaves a draft, finalizes it, or finalizes and emails it.
    on_accept text not null check (on_accept in ('draft', 'finalize', 'send')),
    invoice_id uuid references invoices (id) on delete set null,
    opened_at timestamptz,
    decided_at timestamptz,
    -- The attempt that created it (form:<key>, api:<key id>/<key>).
    source_key text not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint quotes_org_source_key unique (org_id, source_key),
    constraint quotes_org_number unique (org_id, number),
    constraint quotes_open_numbered check ((status = 'draft') = (number is null)),
    constraint quotes_open_token check ((status = 'draft') = (public_token is null)),
    constraint quotes_accepted_invoice check (status = 'accepted' or invoice_id is null)
);
create index quotes_org_idx on quotes (org_id, created_at desc, id desc);

-- A quote's email to its customer.
alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund', 'reminder', 'quote_email'));

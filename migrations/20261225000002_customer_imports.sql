-- Customer imports from CSV: one per file and org (its SHA-256), so the same file uploaded twice is
-- the same import. The valid rows wait here between the preview and the apply; the apply adds them
-- in batches, each batch's customers and the advance of `applied` in one transaction (the counter
-- is the batch's claim: a batch is in or it is not), each customer keyed by the file and its row.

create table customer_imports (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    file_sha256 text not null check (file_sha256 ~ '^[0-9a-f]{64}$'),
    file_name text not null default '' check (length(file_name) <= 200),
    -- Data rows in the file, and how many of them are valid customers.
    total integer not null check (total >= 0),
    valid integer not null check (valid between 0 and total),
    -- [[row number, customer input], ...] for the valid rows; [{row, field, message}] for the others.
    rows jsonb not null,
    errors jsonb not null,
    status text not null default 'previewed' check (status in ('previewed', 'applying', 'done')),
    applied integer not null default 0 check (applied between 0 and valid),
    created_by uuid references users (id) on delete set null,
    created_at timestamptz not null default now(),
    finished_at timestamptz,
    constraint customer_imports_once unique (org_id, file_sha256)
);
create index customer_imports_org_idx on customer_imports (org_id, created_at desc);

alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund', 'reminder', 'quote_email', 'webhook', 'webhook_disabled',
                    'customer_import'));

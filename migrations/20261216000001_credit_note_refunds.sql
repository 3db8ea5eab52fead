-- Refunds through Stripe that a credit note asks for: one per Stripe payment it pays back from,
-- with the amount fixed when the credit note is issued (in its transaction), made by a worker from
-- the outbox (`stripe_refund`, one row per credit note) under the Idempotency-Key
-- `invoicer-refund-<credit note>-<payment intent>`, and completed with Stripe's refund id.
create table credit_note_refunds (
    credit_note_id uuid not null references credit_notes (id) on delete cascade,
    provider_payment_id text not null,
    amount_cents bigint not null check (amount_cents > 0),
    currency text not null,
    state text not null default 'pending' check (state in ('pending', 'succeeded', 'failed')),
    stripe_refund_id text,
    -- Why Stripe refused it (shown to the owner; the money stays with the customer's credit).
    failure text,
    completed_at timestamptz,
    primary key (credit_note_id, provider_payment_id),
    check ((state = 'succeeded') = (stripe_refund_id is not null))
);
create index credit_note_refunds_payment_idx on credit_note_refunds (provider_payment_id);

alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund'));

-- The lines a credit note credits, when it credits lines rather than an amount: how much of the
-- invoice line's quantity, and what that part is worth (its share of the discount and its tax
-- included, rounded half up). A line is never credited beyond its quantity (checked under the
-- invoice's row lock).
create table credit_note_lines (
    credit_note_id uuid not null references credit_notes (id) on delete cascade,
    invoice_id uuid not null,
    position smallint not null,
    quantity_milli bigint not null check (quantity_milli > 0),
    amount_cents bigint not null check (amount_cents >= 0),
    primary key (credit_note_id, position),
    foreign key (invoice_id, position) references invoice_lines (invoice_id, position)
);
create index credit_note_lines_line_idx on credit_note_lines (invoice_id, position);

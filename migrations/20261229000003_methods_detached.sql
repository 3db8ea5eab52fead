-- A saved method the customer removed is let go at its provider too, by a worker (the call leaves
-- the database): detached_at says it was. A debit mandate's status as the provider last told it.
alter table payment_methods
    add column mandate_status text check (length(mandate_status) <= 20),
    add column detached_at timestamptz;

alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund', 'reminder', 'quote_email', 'webhook', 'webhook_disabled',
                    'customer_import', 'credentials_notice', 'org_change_notice',
                    'payment_method_link', 'charge_action', 'detach_payment_method'));

-- Until when a worker holds an attempt (its claim's lease, mirrored on the row): the pick passes
-- over it. On the row, so that a pick that waited for the row's lock re-checks it on the row as
-- committed (a subquery on the claims would still see the claims as they were before the wait).
alter table charge_attempts add column leased_until timestamptz;

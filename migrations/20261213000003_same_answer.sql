-- Sign-up with an address that has an account emails that account instead; "forgot password" for an
-- address without one says so to the address. At most one of each per address and hour (dedupe).
-- A voided or replaced Checkout session is expired at Stripe by a worker (expire_checkout, deduped
-- per session).
alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout'));
create unique index outbox_dedupe_once on outbox (kind, (payload ->> 'dedupe')) where payload ? 'dedupe';

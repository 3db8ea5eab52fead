-- Money that arrives outside Stripe: a bank transfer, cash, a cheque, a card taken elsewhere. A
-- recorded payment is a payment like Stripe's (provider 'manual', its own id as the business key),
-- so invoice_money() derives the invoice from both alike. It is recorded once per attempt (the
-- form's key or the API's Idempotency-Key, named in event_id), and an owner can delete it.
alter table payments
    add column method text
        check (method in ('bank_transfer', 'cash', 'cheque', 'card', 'other')),
    add column paid_on date,
    add column reference text not null default '' check (length(reference) <= 200),
    add column recorded_by uuid references users (id) on delete set null,
    add constraint payments_manual_check
        check ((provider = 'manual') = (method is not null and paid_on is not null));

-- How to pay by transfer, shown on the customer's page, the PDF and the email: the account's
-- holder, IBAN (stored compact, checked with its mod-97 checksum by the app) and BIC, or free text
-- for other schemes; and the reference the customer quotes, `{number}` standing for the invoice's.
alter table orgs
    add column bank_account_holder text not null default ''
        check (length(bank_account_holder) <= 200),
    add column bank_iban text not null default ''
        check (bank_iban ~ '^([A-Z]{2}[0-9]{2}[A-Z0-9]{11,30})?$'),
    add column bank_bic text not null default ''
        check (bank_bic ~ '^([A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?)?$'),
    add column bank_other text not null default '' check (length(bank_other) <= 500),
    add column payment_reference text not null default '{number}'
        check (length(payment_reference) between 1 and 60 and payment_reference like '%{number}%');

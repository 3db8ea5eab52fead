-- Collecting without asking: the customer's saved payment methods, invoices charged automatically,
-- each charge an attempt with a name.

-- The org's retry days (after the first attempt, each retried once) and its late fees.
alter table orgs
    add column retry_days smallint[] not null default '{3,5,7}'
        check (cardinality(retry_days) <= 6 and 1 <= all (retry_days) and 60 >= all (retry_days)),
    add column late_fees jsonb not null default '{"kind": "none", "after_days": []}';

alter table invoices
    add column collection_method text not null default 'send_invoice'
        check (collection_method in ('send_invoice', 'charge_automatically')),
    -- The owner stopped the retries: no attempt is scheduled any more.
    add column charge_retries_stopped_at timestamptz;

-- A customer of the org as its provider knows it: made once per (customer, provider) under the
-- Idempotency-Key invoicer-customer-<id>, so a repeat at the provider finds the same one.
create table provider_customers (
    customer_id uuid not null references customers (id) on delete cascade,
    provider text not null,
    org_id uuid not null references orgs (id) on delete cascade,
    provider_customer text not null,
    livemode boolean not null,
    created_at timestamptz not null default now(),
    primary key (customer_id, provider),
    constraint provider_customers_key unique (provider, provider_customer)
);

-- A card or a SEPA Direct Debit mandate a customer saved at the provider. The provider's id is the
-- business key: a setup event delivered twice saves one method. One default per customer.
create table payment_methods (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    customer_id uuid not null references customers (id) on delete cascade,
    provider text not null,
    provider_method text not null,
    type text not null check (type in ('card', 'sepa_debit')),
    brand text check (length(brand) <= 40),
    last4 text check (length(last4) <= 4),
    mandate text check (length(mandate) <= 100),
    mandate_reference text check (length(mandate_reference) <= 100),
    is_default boolean not null default false,
    -- The event that saved it.
    event_id text not null,
    created_at timestamptz not null default now(),
    removed_at timestamptz,
    constraint payment_methods_provider_key unique (provider, provider_method)
);
create unique index payment_methods_one_default on payment_methods (customer_id)
    where is_default and removed_at is null;
create index payment_methods_customer_idx on payment_methods (customer_id, created_at);

-- Each try to charge an invoice: (invoice, n), claimed by a worker as (job, charge:<invoice>, <n>)
-- and sent to the provider under Idempotency-Key invoicer-charge-<invoice>-<n>. Scheduled until a
-- worker sends it; then its state is the highest its provider reported (processing <
-- requires_action < failed < succeeded); canceled when nothing is to be charged any more.
create table charge_attempts (
    invoice_id uuid not null references invoices (id) on delete cascade,
    n smallint not null check (n between 1 and 10),
    org_id uuid not null references orgs (id) on delete cascade,
    state text not null default 'scheduled'
        check (state in ('scheduled', 'processing', 'requires_action', 'failed', 'succeeded', 'canceled')),
    due_at timestamptz not null,
    payment_method_id uuid references payment_methods (id),
    payment_intent text,
    amount_cents bigint check (amount_cents >= 0),
    reason text check (length(reason) <= 500),
    -- Where the customer confirms a charge that needs them (3-D Secure).
    action_url text check (length(action_url) <= 2000),
    sent_at timestamptz,
    updated_at timestamptz not null default now(),
    primary key (invoice_id, n)
);
create unique index charge_attempts_intent_key on charge_attempts (payment_intent)
    where payment_intent is not null;
create index charge_attempts_due_idx on charge_attempts (due_at) where state = 'scheduled';
create index charge_attempts_org_idx on charge_attempts (org_id);

-- An invoice collected automatically is charged when it is finalized, by whichever path finalizes
-- it (created finalized, a draft finalized, a schedule's run, an accepted quote): its first attempt
-- is written in that same transaction.
create function charge_on_finalize() returns trigger language plpgsql as $$
begin
    if new.collection_method = 'charge_automatically' and new.status = 'open'
       and new.finalized_at is not null
       and (tg_op = 'INSERT' or old.finalized_at is null) then
        insert into charge_attempts (invoice_id, n, org_id, due_at)
        values (new.id, 1, new.org_id, now())
        on conflict do nothing;
    end if;
    return null;
end $$;
create trigger invoices_charge_on_finalize
    after insert or update of finalized_at on invoices
    for each row execute function charge_on_finalize();

-- Two emails to a customer in the org's name: the owner's link to save a payment method, and a
-- charge that waits for the customer to confirm it (3-D Secure). Both in the customers' lane.
alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund', 'reminder', 'quote_email', 'webhook', 'webhook_disabled',
                    'customer_import', 'credentials_notice', 'org_change_notice',
                    'payment_method_link', 'charge_action'));
drop index outbox_lane_due_idx;
alter table outbox drop column lane;
alter table outbox
    add column lane text not null generated always as (
        case
            when kind in ('verify_email', 'reset_password', 'account_notice', 'account_exists',
                          'no_account', 'invitation', 'credentials_notice', 'org_change_notice',
                          'webhook_disabled') then 'account'
            when kind in ('invoice_email', 'payment_receipt', 'reminder', 'quote_email',
                          'payment_method_link', 'charge_action') then 'customer'
            when kind = 'webhook' then 'webhooks'
            else 'jobs'
        end) stored;
create index outbox_lane_due_idx on outbox (lane, org_key, next_attempt_at)
    where sent_at is null and dead_at is null;

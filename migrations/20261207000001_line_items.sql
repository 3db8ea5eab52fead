-- Line items as invoices have them: decimal quantities, per-line tax from the org's rates, an
-- invoice-level discount, notes and payment terms. Every amount is computed by the server (one
-- rounding rule, docs/invoices.md) and stored, so a finalized invoice's numbers never change when the
-- rule or a rate does; the checks below make the stored numbers add up.

create table tax_rates (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    name text not null check (length(name) between 1 and 100),
    -- Thousandths of a percent: 8.875 % is 8875. Never updated (archive and add another, as Stripe).
    percent_milli integer not null check (percent_milli between 0 and 100000),
    -- The attempt that created it ('form:<uuid>', 'api:<key>'), unique per org.
    source_key text,
    archived_at timestamptz,
    created_at timestamptz not null default now(),
    constraint tax_rates_org_source_key unique (org_id, source_key)
);
create index tax_rates_org_idx on tax_rates (org_id, created_at);

alter table invoice_lines
    add column quantity_milli bigint,
    add column amount_cents bigint,
    add column tax_rate_id uuid references tax_rates (id),
    add column tax_name text check (length(tax_name) between 1 and 100),
    add column tax_percent_milli integer check (tax_percent_milli between 0 and 100000),
    add column discount_cents bigint not null default 0 check (discount_cents >= 0),
    add column tax_cents bigint not null default 0 check (tax_cents >= 0),
    add constraint invoice_lines_tax_snapshot check (
        (tax_rate_id is null) = (tax_name is null) and (tax_name is null) = (tax_percent_milli is null)
    );
update invoice_lines
set quantity_milli = quantity::bigint * 1000, amount_cents = quantity::bigint * unit_amount_cents;
alter table invoice_lines
    alter column quantity_milli set not null,
    alter column amount_cents set not null,
    add constraint invoice_lines_quantity_range check (quantity_milli between 1 and 1000000000),
    add constraint invoice_lines_discount_within check (discount_cents <= amount_cents),
    drop column quantity;

alter table invoices
    add column subtotal_cents bigint,
    add column discount_percent_milli integer check (discount_percent_milli between 0 and 100000),
    add column discount_amount_cents bigint check (discount_amount_cents >= 0),
    add column discount_cents bigint not null default 0 check (discount_cents >= 0),
    add column tax_cents bigint not null default 0 check (tax_cents >= 0),
    add column notes text not null default '' check (length(notes) <= 2000),
    add column payment_terms_days smallint check (payment_terms_days between 0 and 365),
    add constraint invoices_one_discount check (
        discount_percent_milli is null or discount_amount_cents is null
    );
update invoices set subtotal_cents = total_cents;
alter table invoices
    alter column subtotal_cents set not null,
    add constraint invoices_total_adds_up check (
        total_cents = subtotal_cents - discount_cents + tax_cents and discount_cents <= subtotal_cents
    );

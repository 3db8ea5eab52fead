-- The invoice lifecycle: drafts (no number yet), finalization (a number, gapless per org and period,
-- in the org's format; a public token), void and uncollectible; the customer's billing details copied
-- at finalization; views of the public page.

-- Org settings: how numbers look and when they restart, the time zone "overdue" and "this year" are
-- reckoned in, the address shown on invoices.
alter table orgs
    add column number_format text not null default 'INV-{seq:6}'
        check (length(number_format) between 1 and 60 and number_format like '%{seq%'),
    add column number_reset text not null default 'never' check (number_reset in ('never', 'yearly')),
    add column time_zone text not null default 'UTC' check (length(time_zone) between 1 and 64),
    add column address text not null default '' check (length(address) <= 1000),
    -- A yearly reset needs the year in the number, or two years would share numbers.
    add constraint orgs_yearly_numbers_name_the_year
        check (number_reset = 'never' or number_format like '%{YYYY}%' or number_format like '%{YY}%');

-- One counter per org and period: 0 when numbers never restart, else the year (in the org's zone).
alter table invoice_counters add column period integer not null default 0;
alter table invoice_counters drop constraint invoice_counters_pkey;
alter table invoice_counters add primary key (org_id, period);

-- `{seq}` or `{seq:N}` (zero-padded to N digits, never truncated), `{YYYY}`, `{YY}`.
create function invoice_number_text(fmt text, seq integer, yr integer)
returns text language sql immutable as $$
    select replace(replace(
        regexp_replace(fmt, '\{seq(:[0-9])?\}',
            lpad(seq::text, greatest(coalesce(substring(fmt from '\{seq:([0-9])\}')::int, 1),
                                     length(seq::text)), '0')),
        '{YYYY}', yr::text),
        '{YY}', lpad((yr % 100)::text, 2, '0'))
$$;

alter table invoices drop constraint invoices_status_check;
alter table invoices add constraint invoices_status_check
    check (status in ('draft', 'open', 'paid', 'void', 'uncollectible', 'refunded'));

alter table invoices drop constraint invoices_org_number_key;
alter table invoices alter column number drop not null;
alter table invoices
    add column number_period integer,
    add column number_text text,
    -- Edits of a draft name the version they were made from; a stale one is refused.
    add column version integer not null default 1,
    add column customer_id uuid references customers (id),
    add column customer_address text not null default '' check (length(customer_address) <= 1000),
    add column customer_tax_id text check (length(customer_tax_id) <= 50),
    -- The customer's page: /i/{public_token}. Set at finalization, cleared by void (revoked).
    add column public_token text,
    add column finalized_at timestamptz,
    add column voided_at timestamptz,
    add column first_viewed_at timestamptz,
    add column last_viewed_at timestamptz,
    add column view_count integer not null default 0;

-- Existing invoices were finalized when created, numbered in the default format.
update invoices
set number_period = 0,
    number_text = 'INV-' || lpad(number::text, 6, '0'),
    finalized_at = created_at,
    public_token = case when status <> 'void'
                        then replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '') end;

alter table invoices
    add constraint invoices_org_number_key unique (org_id, number_period, number),
    add constraint invoices_org_number_text_key unique (org_id, number_text),
    add constraint invoices_public_token_key unique (public_token),
    -- A draft has no number and no public page; everything else has a number.
    add constraint invoices_number_iff_final check ((status = 'draft') = (number is null)),
    add constraint invoices_number_complete
        check ((number is null) = (number_text is null) and (number is null) = (number_period is null)),
    add constraint invoices_draft_has_no_token check (status <> 'draft' or public_token is null);

-- Money follows the lifecycle: a draft or void invoice keeps its status whatever arrives (money for it
-- is an anomaly for the owner); an uncollectible one becomes paid when paid in full, as Stripe does.
create or replace function invoice_money(p_invoice uuid)
returns table (new_status text, new_payment_state text, kept_cents bigint)
language sql stable as $$
    with pay as (
        select p.amount_cents, p.status,
               coalesce(case when r.provider is null then 0
                             when r.full_refund then p.amount_cents
                             else least(p.amount_cents, r.amount_refunded_cents) end, 0) as refunded,
               coalesce((select sum(d.amount_cents) from disputes d
                         where d.provider = p.provider and d.provider_payment_id = p.provider_payment_id
                           and d.status = 'lost'), 0) as lost,
               exists (select 1 from disputes d
                       where d.provider = p.provider and d.provider_payment_id = p.provider_payment_id
                         and d.status = 'open') as disputed
        from payments p
        left join refunds r on r.provider = p.provider and r.provider_payment_id = p.provider_payment_id
        where p.invoice_id = p_invoice
    ), sums as (
        select coalesce(sum(x.amount_cents) filter (where x.status = 'succeeded'), 0) as received,
               coalesce(sum(greatest(x.amount_cents - x.refunded - x.lost, 0))
                        filter (where x.status = 'succeeded'), 0) as kept,
               coalesce(bool_or(x.disputed and x.status = 'succeeded'), false) as disputed,
               coalesce(bool_or(x.status = 'pending'), false) as pending
        from pay x
    )
    select case
               when i.status in ('void', 'draft') then i.status
               when s.received > 0 and s.kept >= i.total_cents then 'paid'
               when s.received > 0 and s.kept = 0 then 'refunded'
               when i.status = 'uncollectible' then 'uncollectible'
               else 'open'
           end,
           case
               when s.disputed then 'disputed'
               when s.received = 0 and s.pending then 'processing'
               when s.received = 0 then 'unpaid'
               when s.kept = 0 then 'refunded'
               when s.kept >= i.total_cents then 'paid'
               when s.kept < s.received then 'partially_refunded'
               else 'partially_paid'
           end,
           s.kept
    from invoices i, sums s
    where i.id = p_invoice
$$;

-- The owner's list: newest first per org stays on invoices_org_created_idx; drafts have no number, so
-- the tie-break is the id (time-ordered v7).
drop index invoices_org_created_idx;
create index invoices_org_created_idx on invoices (org_id, created_at desc, id desc);

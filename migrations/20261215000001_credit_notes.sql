-- Credit notes: a document of their own (gapless numbers per org in their own series, a customer
-- page) that lowers what an invoice asks for. An invoice's `amount_credited_cents` is the sum of its
-- credit notes, kept in the transaction that issues one; invoice_money() derives the invoice from its
-- payments and its credits: what is due is total − credited − kept.
alter table orgs
    add column credit_note_format text not null default 'CN-{seq:6}'
        check (length(credit_note_format) between 1 and 60 and credit_note_format like '%{seq%');

-- A period of `0` unless the format names the year: numbers restart each year only then.
create table credit_note_counters (
    org_id uuid not null references orgs (id) on delete cascade,
    period integer not null,
    last_number integer not null,
    primary key (org_id, period)
);

create table credit_notes (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    invoice_id uuid not null references invoices (id),
    number integer not null,
    number_period integer not null,
    number_text text not null,
    currency text not null,
    total_cents bigint not null check (total_cents > 0),
    reason text not null check (length(reason) between 1 and 500),
    -- What happens to money already paid beyond what is then due: `none` keeps it (the customer's
    -- credit), `manual` paid it back outside the app: `refunded_cents` of it, no longer kept.
    refund text not null default 'none' check (refund in ('none', 'manual', 'stripe')),
    refunded_cents bigint not null default 0 check (refunded_cents >= 0),
    -- The attempt that issued it (`form:<key>`, `api:<key id>/<key>`): one credit note per attempt,
    -- even if the claim row were lost.
    source_key text not null,
    -- The customer's page: /c/{public_token}.
    public_token text not null unique,
    created_by uuid references users (id) on delete set null,
    created_at timestamptz not null default now(),
    constraint credit_notes_number_key unique (org_id, number_period, number),
    constraint credit_notes_org_source_key unique (org_id, source_key)
);
create index credit_notes_invoice_idx on credit_notes (invoice_id, created_at);

alter table invoices
    add column amount_credited_cents bigint not null default 0,
    add constraint invoices_credited_check
        check (amount_credited_cents between 0 and total_cents);

-- The rule of money_facts.sql with credits: due = total − credited, and what credit notes paid
-- back outside the app is no longer kept. An invoice with nothing left due is paid, also when a
-- credit note took the rest off; money beyond what is due is kept (the customer's credit) and shows
-- as amount_paid above what is due.
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
    ), paid as (
        select coalesce(sum(x.amount_cents) filter (where x.status = 'succeeded'), 0) as received,
               coalesce(sum(greatest(x.amount_cents - x.refunded - x.lost, 0))
                        filter (where x.status = 'succeeded'), 0) as kept,
               coalesce(bool_or(x.disputed and x.status = 'succeeded'), false) as disputed,
               coalesce(bool_or(x.status = 'pending'), false) as pending
        from pay x
    ), sums as (
        select p.received, p.disputed, p.pending,
               greatest(p.kept - coalesce((select sum(c.refunded_cents) from credit_notes c
                                           where c.invoice_id = p_invoice), 0), 0) as kept
        from paid p
    )
    select case
               when i.status in ('void', 'draft') then i.status
               when (s.received > 0 or i.amount_credited_cents > 0)
                    and s.kept >= i.total_cents - i.amount_credited_cents then 'paid'
               when s.received > 0 and s.kept = 0 then 'refunded'
               when i.status = 'uncollectible' then 'uncollectible'
               else 'open'
           end,
           case
               when s.disputed then 'disputed'
               when s.received = 0 and s.pending then 'processing'
               when s.received = 0 and i.amount_credited_cents > 0
                    and i.amount_credited_cents >= i.total_cents then 'paid'
               when s.received = 0 then 'unpaid'
               when s.kept = 0 then 'refunded'
               when s.kept >= i.total_cents - i.amount_credited_cents then 'paid'
               when s.kept < s.received then 'partially_refunded'
               else 'partially_paid'
           end,
           s.kept
    from invoices i, sums s
    where i.id = p_invoice
$$;

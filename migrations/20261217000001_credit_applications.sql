-- A customer's credit balance: money kept beyond what their invoices ask for (an overpayment, or a
-- credit note on a paid invoice that kept the money). The owner applies it to another open invoice
-- of the same customer and currency: each application moves `amount_cents` of one invoice's
-- overpayment to another, named by the attempt (one row per source invoice), and invoice_money()
-- counts it out of the one and into the other.
create table credit_applications (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    customer_id uuid not null references customers (id),
    from_invoice_id uuid not null references invoices (id),
    to_invoice_id uuid not null references invoices (id),
    currency text not null,
    amount_cents bigint not null check (amount_cents > 0),
    source_key text not null,
    created_by uuid references users (id) on delete set null,
    created_at timestamptz not null default now(),
    check (from_invoice_id <> to_invoice_id),
    constraint credit_applications_attempt_key unique (org_id, source_key, from_invoice_id)
);
create index credit_applications_from_idx on credit_applications (from_invoice_id);
create index credit_applications_to_idx on credit_applications (to_invoice_id);

-- The rule of credit_notes.sql with applied credit: what an invoice gave away to another is no
-- longer kept, and what it received counts as received and kept.
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
    ), moved as (
        select coalesce((select sum(a.amount_cents) from credit_applications a
                         where a.to_invoice_id = p_invoice), 0) as applied_in,
               coalesce((select sum(a.amount_cents) from credit_applications a
                         where a.from_invoice_id = p_invoice), 0) as applied_out
    ), sums as (
        select p.received + m.applied_in as received, p.disputed, p.pending,
               greatest(p.kept - coalesce((select sum(c.refunded_cents) from credit_notes c
                                           where c.invoice_id = p_invoice), 0) - m.applied_out, 0)
               + m.applied_in as kept
        from paid p, moved m
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

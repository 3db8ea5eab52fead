-- A credit note may pay money back outside the app (`refund = 'manual'`): the part of what was
-- already paid that the credit leaves beyond what is due, recorded with the credit note. It is no
-- longer kept: invoice_money() takes it off what the payments brought in.
alter table credit_notes
    add column refunded_cents bigint not null default 0 check (refunded_cents >= 0);

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

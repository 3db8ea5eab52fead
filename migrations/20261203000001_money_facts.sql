-- Money as Stripe states it. Payments, refunds and disputes are facts keyed by Stripe's own ids, each
-- merged by a rule that does not care about arrival order (a status only moves up its ranking, a
-- cumulative refund only grows, a closed dispute outranks an open one). An invoice's paid amount,
-- payment state and status are derived from its facts by invoice_money(), in the transaction that
-- wrote the fact: the result is a function of the set of events, never of their order.

-- A payment: one per payment intent. pending (a delayed method, not yet money) < failed < succeeded.
alter table payments
    add column status text not null default 'succeeded'
        check (status in ('pending', 'succeeded', 'failed')),
    -- Why it failed, from Stripe, shown to the owner.
    add column failure text;
alter table payments alter column status drop default;

-- The refunded part of a payment: charge.refunded carries the cumulative amount_refunded, so the
-- fact is the largest one seen (and `full` once Stripe says the whole charge is refunded). It may
-- arrive before its payment, and is then simply waiting in this table.
create table refunds (
    provider text not null,
    provider_payment_id text not null,
    amount_refunded_cents bigint not null check (amount_refunded_cents >= 0),
    full_refund boolean not null,
    event_id text not null,
    received_at timestamptz not null default now(),
    primary key (provider, provider_payment_id)
);
create index refunds_received_idx on refunds (received_at);

insert into refunds (provider, provider_payment_id, amount_refunded_cents, full_refund, event_id, received_at)
select provider, provider_payment_id, amount_cents, true, event_id, refunded_at
from payments where refunded_at is not null;
insert into refunds (provider, provider_payment_id, amount_refunded_cents, full_refund, event_id, received_at)
select provider, provider_payment_id, 0, true, event_id, received_at
from pending_refunds
on conflict do nothing;
drop table pending_refunds;
alter table payments drop column refunded_at;

-- A dispute of a payment: open < won < lost. A lost dispute takes its amount off.
create table disputes (
    provider text not null,
    dispute_id text not null,
    provider_payment_id text not null,
    amount_cents bigint not null check (amount_cents >= 0),
    status text not null check (status in ('open', 'won', 'lost')),
    event_id text not null,
    received_at timestamptz not null default now(),
    primary key (provider, dispute_id)
);
create index disputes_payment_idx on disputes (provider, provider_payment_id);
create index disputes_received_idx on disputes (received_at);

alter table invoices
    add column payment_state text not null default 'unpaid'
        check (payment_state in ('unpaid', 'processing', 'partially_paid', 'paid',
                                 'partially_refunded', 'refunded', 'disputed'));
update invoices set payment_state = case
    when status = 'paid' then 'paid'
    when status = 'refunded' then 'refunded'
    when amount_paid_cents > 0 then 'partially_paid'
    else 'unpaid'
end;

-- The one rule (docs/webhooks.md has it as a table). Per succeeded payment p:
--   kept(p) = max(0, amount − refunded − lost disputes), refunded = amount when full_refund else
--   min(amount, amount_refunded).
-- For the invoice: received = Σ amount over succeeded payments, kept = Σ kept(p).
--   payment_state: disputed if a dispute is open; else unpaid / processing (a pending payment) when
--   nothing was received; refunded when all of it went back; paid when kept ≥ total;
--   partially_refunded when some went back; partially_paid otherwise.
--   status: void stays void; paid when received > 0 and kept ≥ total; refunded when received > 0
--   and kept = 0; open otherwise.
create function invoice_money(p_invoice uuid)
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
               when i.status = 'void' then 'void'
               when s.received > 0 and s.kept >= i.total_cents then 'paid'
               when s.received > 0 and s.kept = 0 then 'refunded'
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

-- A customer's statement: every invoice, payment, credit note, refund and lost dispute of their
-- finalized invoices, dated, with what it adds to (debit) or takes from (credit) what they owe.
-- The customer's own page of it is /s/{statement_token}: unguessable (two random UUIDs through
-- SHA-256, 64 hex characters, as invoice links), one per customer.
alter table customers add column statement_token text;
update customers
set statement_token = encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex');
alter table customers
    alter column statement_token
        set default encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex'),
    alter column statement_token set not null,
    add constraint customers_statement_token_key unique (statement_token);

-- A customer's invoices (statements, credit balances) without reading the whole org's.
create index invoices_customer_idx on invoices (customer_id, currency) where customer_id is not null;

-- The statement's entries of `p_customer` of `p_org`, dated in the org's time zone. Credit moved
-- between the customer's own invoices nets out and is left out. `rank` orders a day's entries:
-- invoices first, then what pays or corrects them.
create function customer_entries(p_org uuid, p_customer uuid)
returns table (day date, rank int, kind text, reference text, detail text, note text, currency text,
               debit bigint, credit bigint, at timestamptz)
language sql stable as $$
    with tz as (select time_zone from orgs where id = p_org),
    inv as (
        select i.id, i.number_text, i.currency, i.total_cents, coalesce(i.finalized_at, i.created_at) as at
        from invoices i
        where i.org_id = p_org and i.customer_id = p_customer and i.status not in ('draft', 'void')
    )
    select (inv.at at time zone tz.time_zone)::date, 1, 'invoice', inv.number_text, '', '', inv.currency,
           inv.total_cents, 0::bigint, inv.at
    from inv, tz
    union all
    select coalesce(p.paid_on, (p.created_at at time zone tz.time_zone)::date), 2, 'payment',
           inv.number_text, coalesce(p.method, 'stripe'), coalesce(p.reference, ''),
           inv.currency, 0, p.amount_cents, p.created_at
    from payments p join inv on inv.id = p.invoice_id, tz
    where p.status = 'succeeded'
    union all
    select (c.created_at at time zone tz.time_zone)::date, 3, 'credit_note', c.number_text,
           inv.number_text, c.reason, inv.currency, 0, c.total_cents, c.created_at
    from credit_notes c join inv on inv.id = c.invoice_id, tz
    union all
    select (c.created_at at time zone tz.time_zone)::date, 4, 'refund', inv.number_text, 'manual',
           c.number_text, inv.currency, c.refunded_cents, 0, c.created_at
    from credit_notes c join inv on inv.id = c.invoice_id, tz
    where c.refunded_cents > 0
    union all
    select (r.received_at at time zone tz.time_zone)::date, 4, 'refund', inv.number_text, 'stripe', '',
           inv.currency,
           case when r.full_refund then p.amount_cents else least(p.amount_cents, r.amount_refunded_cents) end,
           0, r.received_at
    from refunds r
    join payments p on p.provider = r.provider and p.provider_payment_id = r.provider_payment_id
    join inv on inv.id = p.invoice_id, tz
    where p.status = 'succeeded' and (r.full_refund or r.amount_refunded_cents > 0)
    union all
    select (d.received_at at time zone tz.time_zone)::date, 5, 'dispute_lost', inv.number_text, 'stripe', '',
           inv.currency, d.amount_cents, 0, d.received_at
    from disputes d
    join payments p on p.provider = d.provider and p.provider_payment_id = d.provider_payment_id
    join inv on inv.id = p.invoice_id, tz
    where p.status = 'succeeded' and d.status = 'lost'
$$;

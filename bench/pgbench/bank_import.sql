-- POST /api/v1/bank_statements with a new statement of :n entries, as the database sees the
-- import (invoicer_core::bank::import::import, in the claim's transaction; the claim itself is
-- the API surface's and left out): the org's accounts, the statement's row, every entry in one
-- insert that skips those already recorded (UNIQUE (org_id, account, entry_key)), the lookup of
-- the invoices the new credits' tokens name (entry g's remittance "Transfer <g>" is one number
-- token for g >= 10; none names an invoice, as in lab::harness::bank's file; the server pairs
-- credits and invoices in memory), and the
-- statement's counts. The entries' values follow lab::harness::bank's formulas.
-- Variables: -D org, iban, n.
\set r random(1, 1000000000000)
BEGIN;
-- (chr(58) is the key's colon: pgbench reads a colon in a literal as a variable.)
-- The ids the server mints (UUIDv7, time-ordered): the statement's, and each entry's from the
-- transaction's millisecond and the entry's place.
/*bench*/ select lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') as ms,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as sid \gset
/*end*/ select array_remove(array_prepend(nullif(bank_iban, ''), bank_accounts), null) as "a!"
from orgs where id = :org::uuid;
insert into bank_statements (id, org_id, format, account_iban, entries, new_entries, matched)
values (:sid::uuid, :org::uuid, 'camt.053', :iban::text, :n, 0, 0);
insert into bank_entries (id, org_id, account, entry_key, statement_id, booked_on,
                          amount_cents, currency, counterparty, remittance, bank_reference)
select n.id, :org::uuid, n.account, n.entry_key, :sid::uuid, n.booked_on, n.amount_cents, n.currency,
       n.counterparty, n.remittance, nullif(n.bank_reference, '')
from unnest((select array_agg((:ms::text || '7' || lpad(to_hex(g), 19, '0'))::uuid order by g) from generate_series(1, :n::int) g)::uuid[],
            (select array_agg(:iban::text order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg('ref' || chr(58) || 'pgb-' || :r::text || '-' || g order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg(current_date - (g % 28)::int order by g) from generate_series(1, :n::int) g)::date[],
            (select array_agg(case when g % 10 = 0 then -((g * 13 % 5000) + 1) else (g * 7 % 90000) + 100 end order by g) from generate_series(1, :n::int) g)::bigint[],
            (select array_agg('EUR'::text order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg(case when g % 10 = 0 then '' else 'Payer ' || g end order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg('Transfer ' || g order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg('pgb-' || :r::text || '-' || g order by g) from generate_series(1, :n::int) g)::text[])
     as n (id, account, entry_key, booked_on, amount_cents, currency, counterparty,
           remittance, bank_reference)
where n.amount_cents <> 0
on conflict (org_id, account, entry_key) do nothing
returning id, amount_cents, remittance, currency;
select i.id as "id!", 0 as "kind!", i.payment_reference as "token!", upper(i.currency) as "currency!"
from invoices i
where i.org_id = :org::uuid and i.payment_reference = any(array[]::text[])
  and i.status not in ('draft', 'void')
union all
select i.id, 1, lower(i.number_text), upper(i.currency)
from invoices i
where i.org_id = :org::uuid and lower(i.number_text) = any((select array_agg(g::text order by g::text) from generate_series(10, :n::int) g where g % 10 <> 0)::text[]) and i.number_text is not null
  and i.status not in ('draft', 'void');
update bank_statements set new_entries = :n, matched = 0 where id = :sid::uuid;
COMMIT;

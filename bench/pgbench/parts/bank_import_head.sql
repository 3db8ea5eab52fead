-- A bank statement's import up to its entries' insert (bank::import::import): the ids the server
-- mints, the org's accounts, the statement's row, every entry in one insert that skips those
-- already recorded. {key} is the text that makes the statement's entry keys.
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
            (select array_agg('ref' || chr(58) || 'pgb-' || {key} || '-' || g order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg(current_date - (g % 28)::int order by g) from generate_series(1, :n::int) g)::date[],
            (select array_agg(case when g % 10 = 0 then -((g * 13 % 5000) + 1) else (g * 7 % 90000) + 100 end order by g) from generate_series(1, :n::int) g)::bigint[],
            (select array_agg('EUR'::text order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg(case when g % 10 = 0 then '' else 'Payer ' || g end order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg('Transfer ' || g order by g) from generate_series(1, :n::int) g)::text[],
            (select array_agg('pgb-' || {key} || '-' || g order by g) from generate_series(1, :n::int) g)::text[])
     as n (id, account, entry_key, booked_on, amount_cents, currency, counterparty,
           remittance, bank_reference)
where n.amount_cents <> 0
on conflict (org_id, account, entry_key) do nothing
returning id, amount_cents, remittance, currency;

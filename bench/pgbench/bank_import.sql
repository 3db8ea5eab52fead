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
-- include: parts/bank_import_head.sql key=:r::text
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

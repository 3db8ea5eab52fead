-- The same statement imported again (all duplicates), as the database sees it: the accounts,
-- the statement's row, the insert that skips every entry (each already recorded under its
-- identity) and the statement's counts; no new credit, so no match. The entries are those of
-- -D tag, inserted by this script's first run (lab bench bank runs it once before measuring).
-- Variables: -D org, iban, n, tag.
BEGIN;
-- include: parts/bank_import_head.sql key=:tag::text
update bank_statements set new_entries = 0, matched = 0 where id = :sid::uuid;
COMMIT;

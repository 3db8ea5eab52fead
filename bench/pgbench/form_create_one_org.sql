-- The create form's server function (POST /rpc/create_invoice) with a new form key, as the database
-- sees it: the session and its user loaded in one statement (app/src/ssr/auth.rs load_cookie_session), then
-- surfaces::form::invoice_from_form's transaction (claim with the content's fingerprint written done
-- with the invoice id minted up front, the org's number, invoice with its source key and lines in
-- one statement, the won attempt's row).
-- All clients in one org (-D org, session, sid, user): creates take turns on the org's gapless numbering.
-- Ids the server mints (UUIDv7, time-ordered) are minted here the same way, in the first statement.
\set r random(1, 1000000000000)
/*bench*/ select (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as form_key,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as inv \gset
/*end*/
-- include: parts/session.sql session=:session
;
-- include: parts/form_create_tx.sql

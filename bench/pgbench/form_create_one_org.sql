-- The create form's server function (POST /rpc/create_invoice) with a new form key, as the database
-- sees it: the session and its user loaded by tower-sessions and axum-login, then
-- surfaces::form::invoice_from_form's transaction (claim with the content's fingerprint written done
-- with the invoice id minted up front, the org's number, invoice with its source key and lines in
-- one statement, the won attempt's row).
-- All clients in one org (-D org, session, sid, user): creates take turns on the org's gapless numbering.
-- Ids the server mints (UUIDv7, time-ordered) are minted here the same way, in the first statement.
\set r random(1, 1000000000000)
select data /*bench*/,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as form_key,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as inv /*end*/
from "tower_sessions"."session" where id = :session and expiry_date > now() \gset
select u.id, u.email, u.password_hash, u.email_verified_at is not null as "verified!",
       o.id as org_id, o.name as org_name, o.einvoicing, m.role, s.last_seen_at < now() - interval '1 minute' as "stale!"
from user_sessions s join users u on u.id = s.user_id
join memberships m on m.user_id = s.user_id and m.org_id = s.org_id join orgs o on o.id = s.org_id
where s.id = :sid::uuid and s.user_id = :user::uuid and s.ended_at is null;
-- include: parts/form_create_tx.sql

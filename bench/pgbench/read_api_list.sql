-- GET /api/v1/invoices?limit=20&cursor=<cursor> (lab bench read), as the database sees it: the
-- key lookup (server/src/api/client.rs Client -> app/src/ssr/api_keys.rs authenticate;
-- last_used_at is written at most once a minute, so not here), then server/src/api/invoices.rs
-- list_invoices on one pooled connection: a page of 20 (+1) with app/src/ssr/invoices.rs page,
-- then those 20 invoices in full and their lines (get_many, with_lines), the ids bound as a
-- uuid[].
-- Prepared in the server (sqlx's statement cache: with no `like` pattern, the statement's generic
-- plan reads the same index); pgbench -M prepared sends it the same way.
-- The others are prepared (sqlx statement cache).
-- The page's ids are needed by the next two statements: the page statement is wrapped to return
-- them as one row for \gset (the first 20 ids, as the server takes; count(l.*) keeps every
-- column of the page computed, as the server's statement does). The wrapped statement is the
-- server's.
-- Variables: -D org, apikeyhash (hex), cursor_at, cursor_id.
select k.id, k.org_id, k.role as key_role, m.role as member_role, o.einvoicing,
       k.last_used_at is null or k.last_used_at < now() - interval '1 minute' as "stale!"
from api_keys k
join memberships m on m.user_id = k.created_by and m.org_id = k.org_id
join orgs o on o.id = k.org_id
where k.hash = decode(:apikeyhash, 'hex') and k.revoked_at is null and (k.expires_at is null or k.expires_at > now());
/*bench*/ select (array_agg(l.id))[1:20] as ids, count(l.*) as page_rows from ( /*end*/
select i.id, i.number_text, i.status, i.customer_name, i.currency, i.due_date, i.total_cents,
       i.amount_paid_cents, i.payment_state, i.created_at,
       invoice_overdue(i.status, i.due_date, o.time_zone) as overdue
from invoices i join orgs o on o.id = i.org_id
where i.org_id = :org::uuid and (i.created_at, i.id) < (:cursor_at::timestamptz, :cursor_id::uuid) order by i.created_at desc, i.id desc limit 21
/*bench*/ ) l /*end*/ \gset
-- include: parts/invoices_by_ids.sql ids=:ids::uuid[] org=:org::uuid

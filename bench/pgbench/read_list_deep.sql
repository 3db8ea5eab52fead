-- GET /invoices?before=<cursor> (lab bench read), as the database sees it: the invoice list
-- page's server function (app/src/api.rs list_invoices, rendered by app/src/pages/invoices.rs
-- InvoiceListPage) reading one page of 50 (+1 to know there is a next) with
-- app/src/ssr/invoices.rs page.
-- The session load (server/src/session_store.rs PgSessions::load -> app/src/ssr/auth.rs
-- load_cookie_session: the cookie's session and, in the same statement, the user, org and role its
-- login names) comes first: the auth layer of server/src/web.rs router runs it on every request that
-- carries the session cookie.
-- Prepared in the server (sqlx's statement cache: with no `like` pattern, the statement's generic
-- plan reads the same index); pgbench -M prepared sends it the same way.
-- Variables: -D org, user, sid, session, cursor_at, cursor_id (the row 90 % deep that the cursor
-- names).
-- include: parts/session.sql session=:session
;
select i.id, i.number_text, i.status, i.customer_name, i.currency, i.due_date, i.total_cents,
       i.amount_paid_cents, i.payment_state, i.created_at,
       invoice_overdue(i.status, i.due_date, o.time_zone) as overdue
from invoices i join orgs o on o.id = i.org_id
where i.org_id = :org::uuid and (i.created_at, i.id) < (:cursor_at::timestamptz, :cursor_id::uuid) order by i.created_at desc, i.id desc limit 51;

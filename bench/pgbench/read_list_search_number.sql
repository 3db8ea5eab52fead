-- GET /invoices?q=<number prefix> (lab bench read), as the database sees it: the invoice list
-- page's server function (app/src/api.rs list_invoices, rendered by app/src/pages/invoices.rs
-- InvoiceListPage) reading one page of 50 (+1 to know there is a next) with
-- app/src/ssr/invoices.rs page.
-- The session load (tower-sessions-sqlx-store PostgresStore::load; the app passes its clock as
-- $2, here now()) and the user load (axum-login Backend::get_user -> app/src/ssr/auth.rs
-- find_session, by the session row) come first: the auth layer of server/src/web.rs router runs them on every
-- request that carries the session cookie.
-- Prepared in the server (sqlx's statement cache), like every list page: one statement of two
-- branches of which Postgres runs one, picked by a probe that counts the matches in the two prefix
-- indexes (up to 1001 each, app/src/ssr/invoices.rs SEARCH_SORTS_AT_MOST): few are read by their
-- prefix ranges (`~>=~`/`~<~`, which a generic plan bounds an index scan by) and sorted; many are
-- filtered along the list's index. pgbench -M prepared sends it the same way.
-- The server binds the lowered text as prefix_from and the range's end (app/src/ssr/mod.rs
-- PrefixRange) as prefix_to.
-- Variables: -D org, user, sid, session, prefix_from, prefix_to (lowered, e.g. inv-00005 and inv-00006).
-- include: parts/session.sql
with probe as materialized (select count(*) as matches from ((select from invoices where org_id = :org::uuid and (lower(number_text) ~>=~ :prefix_from and lower(number_text) ~<~ :prefix_to) limit 1001) union all (select from invoices where org_id = :org::uuid and (lower(customer_name) ~>=~ :prefix_from and lower(customer_name) ~<~ :prefix_to) limit 1001)) matched)
select * from ((select i.id, i.number_text, i.status, i.customer_name, i.currency, i.due_date, i.total_cents,
       i.amount_paid_cents, i.payment_state, i.created_at,
       invoice_overdue(i.status, i.due_date, o.time_zone) as overdue
from invoices i join orgs o on o.id = i.org_id
where i.org_id = :org::uuid and (select matches from probe) <= 1000 and ((lower(i.number_text) ~>=~ :prefix_from and lower(i.number_text) ~<~ :prefix_to) or (lower(i.customer_name) ~>=~ :prefix_from and lower(i.customer_name) ~<~ :prefix_to)) order by i.created_at desc, i.id desc limit 51)
union all (select i.id, i.number_text, i.status, i.customer_name, i.currency, i.due_date, i.total_cents,
       i.amount_paid_cents, i.payment_state, i.created_at,
       invoice_overdue(i.status, i.due_date, o.time_zone) as overdue
from invoices i join orgs o on o.id = i.org_id
where i.org_id = :org::uuid and (select matches from probe) > 1000 and (starts_with(lower(i.number_text), :prefix_from) or starts_with(lower(i.customer_name), :prefix_from)) order by i.created_at desc, i.id desc limit 51)) page
order by created_at desc, id desc limit 51;

-- GET /i/{token} (lab bench read), as the database sees it: server/src/public.rs page ->
-- app/src/ssr/public.rs open, on one pooled connection: the token's invoice and org with the
-- view recorded (the update in the CTE writes at most once a minute per token, VIEW_GAP_SECS,
-- bound as $2 = 60), then the invoice and its lines (app/src/ssr/invoices.rs get -> get_many,
-- with_lines; the id as a one-element uuid[]).
-- No session load: the public routes are merged outside the session layers (although the bench
-- sends the cookie). All three statements are prepared (sqlx statement cache).
-- The first statement's id and org_id are taken with \gset, as the server takes them from its
-- row.
-- Variables: -D token.
with seen as (
    update invoices
    set first_viewed_at = coalesce(first_viewed_at, now()), last_viewed_at = now(),
        view_count = view_count + 1
    where public_token = :token
      and (last_viewed_at is null
           or last_viewed_at < now() - make_interval(secs => 60::float8))
)
select i.id, i.org_id, o.name as org_name, o.address as org_address, o.payments_enabled
from invoices i join orgs o on o.id = i.org_id
where i.public_token = :token \gset pub_
select i.id, i.number_text, i.status, i.version, i.customer_id, i.customer_name,
       i.customer_email, i.customer_address, i.customer_tax_id, i.currency,
       i.due_date as "due_date: NaiveDate", i.payment_terms_days, i.subtotal_cents,
       i.discount_percent_milli, i.discount_amount_cents, i.discount_cents, i.tax_cents,
       i.total_cents, i.notes, i.amount_paid_cents,
       i.payment_state, invoice_overdue(i.status, i.due_date, o.time_zone) as "overdue!",
       i.public_token, i.finalized_at as "finalized_at: DateTime<Utc>",
       i.first_viewed_at as "first_viewed_at: DateTime<Utc>",
       i.created_at as "created_at: DateTime<Utc>"
from unnest(array[:pub_id::uuid]::uuid[]) as wanted (id)
join invoices i on i.id = wanted.id
join orgs o on o.id = i.org_id
where i.org_id = :pub_org_id::uuid;
select invoice_id, description, quantity_milli, unit_amount_cents, amount_cents, tax_rate_id,
       tax_name, tax_percent_milli, discount_cents, tax_cents
from invoice_lines
where invoice_id = any(array[:pub_id::uuid])
order by invoice_id, position;

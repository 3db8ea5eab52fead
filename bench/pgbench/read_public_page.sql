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
-- include: parts/public_open.sql
-- The customer's saved payment methods (server/src/public/invoice.rs page ->
-- payments::saved::of_invoice), for an invoice with a customer record.
select m.id, m.type as kind, m.brand, m.last4, m.mandate_reference, m.mandate_status,
       m.is_default
from invoices i
join payment_methods m on m.customer_id = i.customer_id and m.org_id = i.org_id
where i.id = :pub_id::uuid and m.removed_at is null
order by m.created_at, m.id;

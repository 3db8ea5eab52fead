-- GET /invoices/{id} (lab bench read), as the database sees it: the invoice page's server
-- function (app/src/api.rs get_invoice, rendered by app/src/pages/invoices.rs): the invoice and
-- its lines (own_invoice -> app/src/ssr/invoices.rs get -> get_many, with_lines; the server binds
-- the id as a one-element uuid[]), then side by side on their own connections its emails
-- (app/src/ssr/outbox.rs for_invoice), its history (app/src/ssr/activity.rs rows with the invoice
-- filter), its payments and anomalies (app/src/ssr/payments.rs for_invoice) and whether the org
-- takes payments (app/src/ssr/accounts.rs payments_enabled); here in sequence.
-- The session load (server/src/session_store.rs PgSessions::load -> app/src/ssr/auth.rs
-- load_cookie_session: the cookie's session and, in the same statement, the user, org and role its
-- login names) comes first: the auth layer of server/src/web.rs router runs it on every request that
-- carries the session cookie.
-- All prepared in the server (sqlx's statement cache; the history statement carries no `like`
-- pattern); pgbench -M prepared sends them the same way.
-- Variables: -D org, user, sid, session, invoice.
-- include: parts/session.sql session=:session
;
-- include: parts/invoices_by_ids.sql ids=array[:invoice::uuid]::uuid[] org=:org::uuid
select id, kind, attempts, last_error, sent_at is not null as "sent!", dead_at is not null as "dead!"
from outbox
where org_id = :org::uuid and invoice_id = :invoice::uuid
order by created_at;
-- include: parts/activity_page.sql
where a.org_id = :org::uuid and a.invoice_id = :invoice::uuid order by a.created_at desc, a.id desc limit 51;
select p.id, p.provider, p.provider_payment_id, p.amount_cents, p.status as "status: PaymentStatus", p.failure,
       p.method as "method: PaymentMethod", p.paid_on as "paid_on: chrono::NaiveDate", p.reference,
       coalesce(case when r.provider is null then 0
                     when r.full_refund then p.amount_cents
                     else least(p.amount_cents, r.amount_refunded_cents) end, 0) as "refunded!",
       (select d.status from disputes d
        where d.provider = p.provider and d.provider_payment_id = p.provider_payment_id
        order by d.received_at desc limit 1) as "dispute: DisputeStatus"
from payments p
left join refunds r on r.provider = p.provider and r.provider_payment_id = p.provider_payment_id
where p.org_id = :org::uuid and p.invoice_id = :invoice::uuid
order by p.created_at;
select coalesce(detail, type) as "detail!" from stripe_events
where org_id = :org::uuid and invoice_id = :invoice::uuid and outcome = 'anomaly'
order by received_at;
select payments_enabled, (now() at time zone time_zone)::date as "today!: chrono::NaiveDate", einvoicing from orgs where id = :org::uuid;
-- Whether payment reminders are off for the invoice (app/src/rpc/schedules.rs reminders_off; $3:
-- false, an invoice).
select coalesce((select reminders_off from invoices where id = :invoice::uuid and org_id = :org::uuid and not false),
                (select reminders_off from customers where id = :invoice::uuid and org_id = :org::uuid and false),
                false) as "off!";
-- The customer's credit that could be applied (app/src/ssr/credit_balance.rs available_for): sent for
-- an open invoice with a customer and something due, as the benchmark's invoice is.
select least(greatest(i.total_cents - i.amount_credited_cents - i.amount_paid_cents, 0),
             coalesce((select sum(o.amount_paid_cents - (o.total_cents - o.amount_credited_cents))
                       from invoices o
                       where o.org_id = i.org_id and o.customer_id = i.customer_id
                         and o.currency = i.currency and o.id <> i.id and o.status <> 'void'
                         and o.amount_paid_cents > o.total_cents - o.amount_credited_cents), 0))::bigint
       as "available!"
from invoices i
where i.id = :invoice::uuid and i.org_id = :org::uuid and i.customer_id is not null;

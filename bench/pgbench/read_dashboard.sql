-- GET /dashboard (lab bench read), as the database sees it: the dashboard's server function
-- (app/src/rpc/dashboard.rs get_dashboard -> app/src/ssr/dashboard.rs dashboard) after the
-- session and user loads: the org's date, the aging of every open invoice summed per customer and
-- currency (app/src/ssr/reports.rs aging, without a limit), what came in this month and quarter,
-- and twelve months of invoicing and credit notes. The server binds the quarter's, the month's and
-- the twelve months' first days; here they are worked out from :today in place.
-- Prepared in the server (sqlx's statement cache); pgbench -M prepared sends them the same way.
-- Variables: -D org, user, sid, session.
-- include: parts/session.sql session=:session
;
/*bench*/ select "today!: NaiveDate" as today from ( /*end*/
select (now() at time zone time_zone)::date as "today!: NaiveDate" from orgs where id = :org::uuid
/*bench*/ ) s /*end*/ \gset
with open as (
    select customer_id, customer_name, lower(customer_email) as email, currency, due_date,
           total_cents - amount_credited_cents - amount_paid_cents as due,
           :today::date::date - due_date as late
    from invoices
    where org_id = :org::uuid and status in ('open', 'uncollectible')
)
select customer_id, min(customer_name) as "name!", min(email) as "email!",
       currency as "currency!",
       coalesce(sum(due) filter (where late <= 0), 0)::bigint as "current!",
       coalesce(sum(due) filter (where late between 1 and 30), 0)::bigint as "d30!",
       coalesce(sum(due) filter (where late between 31 and 60), 0)::bigint as "d60!",
       coalesce(sum(due) filter (where late between 61 and 90), 0)::bigint as "d90!",
       coalesce(sum(due) filter (where late > 90), 0)::bigint as "older!",
       sum(due)::bigint as "total!", count(*) as "invoices!",
       min(due_date) as "oldest!: NaiveDate"
from open where due > 0
group by customer_id, case when customer_id is null then email end, currency
order by 10 desc, 2
limit null;
with paid as (
    select p.currency, p.amount_cents,
           coalesce(p.paid_on, (p.created_at at time zone o.time_zone)::date) as day
    from payments p join orgs o on o.id = p.org_id
    where p.org_id = :org::uuid and p.status = 'succeeded'
      and p.created_at >= (date_trunc('quarter', :today::date)::date::date::timestamp at time zone o.time_zone)
)
select currency as "currency!",
       coalesce(sum(amount_cents) filter (where day >= date_trunc('month', :today::date)::date::date), 0)::bigint as "month!",
       coalesce(sum(amount_cents) filter (where day >= date_trunc('quarter', :today::date)::date::date), 0)::bigint as "quarter!"
from paid group by currency order by currency;
with invoiced as (
    select date_trunc('month', i.finalized_at at time zone o.time_zone)::date as month,
           i.currency, sum(i.total_cents)::bigint as cents
    from invoices i join orgs o on o.id = i.org_id
    where i.org_id = :org::uuid and i.finalized_at >= ((date_trunc('month', :today::date) - interval '11 months')::date::date::timestamp at time zone o.time_zone)
      and i.status <> 'void'
    group by 1, 2
), credited as (
    select date_trunc('month', c.created_at at time zone o.time_zone)::date as month,
           c.currency, sum(c.total_cents)::bigint as cents
    from credit_notes c join orgs o on o.id = c.org_id
    where c.org_id = :org::uuid and c.created_at >= ((date_trunc('month', :today::date) - interval '11 months')::date::date::timestamp at time zone o.time_zone)
    group by 1, 2
)
select coalesce(i.month, c.month) as "month!: NaiveDate",
       coalesce(i.currency, c.currency) as "currency!",
       coalesce(i.cents, 0)::bigint as "invoiced!", coalesce(c.cents, 0)::bigint as "credited!"
from invoiced i full join credited c on c.month = i.month and c.currency = i.currency
order by 1, 2;

with probe as materialized (select count(*) as matches from ((select from invoices where org_id = :org::uuid and (lower(number_text) ~>=~ {from} and lower(number_text) ~<~ {to}) limit 1001) union all (select from invoices where org_id = :org::uuid and (lower(customer_name) ~>=~ {from} and lower(customer_name) ~<~ {to}) limit 1001)) matched)
select * from ((select i.id, i.number_text, i.status, i.customer_name, i.currency, i.due_date, i.total_cents,
       i.amount_paid_cents, i.payment_state, i.created_at,
       invoice_overdue(i.status, i.due_date, o.time_zone) as overdue
from invoices i join orgs o on o.id = i.org_id
where i.org_id = :org::uuid and (select matches from probe) <= 1000 and ((lower(i.number_text) ~>=~ {from} and lower(i.number_text) ~<~ {to}) or (lower(i.customer_name) ~>=~ {from} and lower(i.customer_name) ~<~ {to})) order by i.created_at desc, i.id desc limit 51)
union all (select i.id, i.number_text, i.status, i.customer_name, i.currency, i.due_date, i.total_cents,
       i.amount_paid_cents, i.payment_state, i.created_at,
       invoice_overdue(i.status, i.due_date, o.time_zone) as overdue
from invoices i join orgs o on o.id = i.org_id
where i.org_id = :org::uuid and (select matches from probe) > 1000 and (starts_with(lower(i.number_text), {from}) or starts_with(lower(i.customer_name), {from})) order by i.created_at desc, i.id desc limit 51)) page
order by created_at desc, id desc limit 51;

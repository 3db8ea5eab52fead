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
-- include: parts/invoice_columns.sql
from unnest(array[:pub_id::uuid]::uuid[]) as wanted (id)
join invoices i on i.id = wanted.id
join orgs o on o.id = i.org_id
where i.org_id = :pub_org_id::uuid;
select invoice_id, description, quantity_milli, unit_amount_cents, amount_cents, tax_rate_id,
       tax_name, tax_percent_milli, discount_cents, tax_cents
from invoice_lines
where invoice_id = any(array[:pub_id::uuid])
order by invoice_id, position;

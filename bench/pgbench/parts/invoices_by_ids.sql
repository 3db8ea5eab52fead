-- include: parts/invoice_columns.sql
from unnest({ids}) as wanted (id)
join invoices i on i.id = wanted.id
join orgs o on o.id = i.org_id
where i.org_id = {org};
select invoice_id, position, description, quantity_milli, unit_amount_cents, amount_cents,
       tax_rate_id, tax_name, tax_percent_milli, discount_cents, tax_cents
from invoice_lines
where invoice_id = any({ids})
order by invoice_id, position;

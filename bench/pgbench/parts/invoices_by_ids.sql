-- include: parts/invoice_columns.sql
from unnest({ids}) as wanted (id)
join invoices i on i.id = wanted.id
join orgs o on o.id = i.org_id
where i.org_id = {org};
select l.invoice_id, l.position, l.description, l.quantity_milli, l.unit_amount_cents,
       l.amount_cents, l.tax_rate_id, l.tax_name, l.tax_percent_milli, l.discount_cents,
       l.tax_cents, r.category as "tax_category?", r.exemption_reason as "exemption_reason?"
from invoice_lines l left join tax_rates r on r.id = l.tax_rate_id
where l.invoice_id = any({ids})
order by l.invoice_id, l.position;

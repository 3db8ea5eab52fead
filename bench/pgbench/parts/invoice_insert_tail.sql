    left join counter c on true left join org on true
    left join customers cu on cu.id = h.customer_id and cu.org_id = :org::uuid
    returning status, due_date, number_text, finalized_at, created_at, customer_id,
              customer_address, customer_tax_id
), lines as (
    insert into invoice_lines (invoice_id, position, description, quantity_milli,
                               unit_amount_cents, amount_cents, tax_rate_id, tax_name,
                               tax_percent_milli, discount_cents, tax_cents)
    select :inv::uuid, l.position, l.description, l.quantity_milli, l.unit_amount_cents,
           l.amount_cents, l.tax_rate_id, l.tax_name, l.tax_percent_milli, l.discount_cents,
           l.tax_cents
    from jsonb_populate_recordset(null::invoice_lines, '[{"position": 1,"description": "Consulting","quantity_milli": 2000,"unit_amount_cents": 15000,"amount_cents": 30000,"tax_rate_id": null,"tax_name": null,"tax_percent_milli": null,"discount_cents": 0,"tax_cents": 0}]'::jsonb) l
)
select number_text, finalized_at as "finalized_at: DateTime<Utc>",
       created_at as "created_at!: DateTime<Utc>", customer_id,
       customer_address as "customer_address!", customer_tax_id,
       due_date as "due_date!: NaiveDate",
       invoice_overdue(invoice.status, invoice.due_date, org.time_zone) as "overdue!",
       org.einvoicing as "einvoicing!",
       exists (select from customers cu where cu.id = invoice.customer_id
                                          and cu.einvoice_channel = 'peppol') as "peppol!"
from invoice, org;

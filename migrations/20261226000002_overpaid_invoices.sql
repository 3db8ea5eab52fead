-- The customer's credit on an open invoice's page (credit_balance::available_for) sums what the
-- customer overpaid on their other invoices. Through the customer's and the org's indexes its
-- generic plan read every invoice of the org (100,001 rows, 3.3 ms at 100,000 invoices): overpaid
-- invoices are few, and this index holds only them.
create index invoices_overpaid_idx on invoices (org_id, customer_id, currency)
    where amount_paid_cents > total_cents - amount_credited_cents and status <> 'void';

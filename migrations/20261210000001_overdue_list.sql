-- The overdue filter of the invoice list (invoice_overdue: open or uncollectible, and past due in the
-- org's time zone) reads the org's unpaid invoices newest first and stops at a page: without this
-- index it gathered every open and uncollectible invoice of the org and sorted them (two status
-- values cannot come out of (org_id, status, created_at) in created_at order).
create index invoices_org_unpaid_created_idx on invoices (org_id, created_at desc, id desc)
    where status in ('open', 'uncollectible');

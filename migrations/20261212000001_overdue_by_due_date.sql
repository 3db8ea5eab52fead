-- The overdue filter of the invoice list runs most overdue first: this index of the org's unpaid
-- invoices by due date gives its rows in that order from the first, bounded by today, so a page costs
-- the same however many open invoices are not yet due. It replaces the index of unpaid invoices
-- newest first, which had to skip every open invoice not yet due before finding a page.
create index invoices_org_unpaid_due_idx on invoices (org_id, due_date, id)
    where status in ('open', 'uncollectible');
drop index invoices_org_unpaid_created_idx;

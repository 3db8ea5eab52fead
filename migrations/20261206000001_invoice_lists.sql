-- The invoice list's filters and searches, each from an index that leads with the org and ends in the
-- list's order, so a page deep in a filtered list costs what the first does.
create index invoices_org_status_created_idx on invoices (org_id, status, created_at desc, id desc);
create index invoices_org_payment_created_idx
    on invoices (org_id, payment_state, created_at desc, id desc);
create index invoices_org_number_prefix_idx
    on invoices (org_id, lower(number_text) text_pattern_ops) where number_text is not null;
create index invoices_org_customer_prefix_idx
    on invoices (org_id, lower(customer_name) text_pattern_ops);

-- The reminder run scans, per org with reminder steps, its open invoices whose due date falls in
-- the window of its steps (from the last step plus the catch-up days to the first): an org's history
-- of open invoices, and the orgs without reminders, cost it nothing.
drop index invoices_open_due_idx;
create index invoices_open_org_due_idx on invoices (org_id, due_date)
    where status = 'open' and not reminders_off;

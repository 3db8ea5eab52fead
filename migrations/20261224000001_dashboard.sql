-- The dashboard's figures from indexes of the org's rows: what came in since a date, what was
-- invoiced and credited since a date (the invoices' index carries what the sum needs).
create index payments_org_created_idx on payments (org_id, created_at);
create index invoices_org_finalized_idx on invoices (org_id, finalized_at)
    include (currency, total_cents, status) where finalized_at is not null;
create index credit_notes_org_created_idx on credit_notes (org_id, created_at);

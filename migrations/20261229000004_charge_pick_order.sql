-- The pick takes the first due attempt by (due_at, invoice_id): the index gives that order, so a
-- pick stops at the first row it can lock instead of sorting every due attempt.
drop index charge_attempts_due_idx;
create index charge_attempts_due_idx on charge_attempts (due_at, invoice_id) where state = 'scheduled';

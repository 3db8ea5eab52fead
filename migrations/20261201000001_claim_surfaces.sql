-- Claims name their surface with the same word as logs, metrics and the activity page ('webhook',
-- not 'stripe'), and each form has its own namespace: the owner of a form claim is '<org>/<form>',
-- so a key minted for one form can never be answered with another form's result.
alter table claims drop constraint claims_scope_check;
update claims set scope = 'webhook' where scope = 'stripe';
alter table claims add constraint claims_scope_check check (scope in ('form', 'webhook', 'api', 'job'));

update claims c set owner = c.owner || '/create_invoice'
where c.scope = 'form' and c.owner not like '%/%'
  and exists (select 1 from invoices i where i.id = c.result_id);
update claims c set owner = c.owner || '/send_invoice'
where c.scope = 'form' and c.owner not like '%/%';

-- A customer's statement link /s/{statement_token} can be replaced (a new token; the old one then
-- matches nothing), and an archived customer has none: archiving clears the token, and unarchiving
-- leaves it cleared until the owner makes a new link, so a link sent before the archive never works
-- again. New customers still get a token from the column's default.
alter table customers add column archived_at timestamptz;
alter table customers alter column statement_token drop not null;
alter table customers
    add constraint customers_archived_without_statement_link
        check (archived_at is null or statement_token is null);

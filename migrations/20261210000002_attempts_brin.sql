-- Retention finds old attempts by time across orgs; a B-tree on created_at also offered the planner an
-- ordered path for an org's activity page (walk every org's attempts newest first, keep this org's),
-- and it took it when the org's rows were old and the newest belonged to others: 139 ms instead of
-- 0.5 ms. A BRIN index serves the retention's range (attempts are appended in time order) and gives no
-- order, so the page always reads its org's own index.
drop index attempts_created_idx;
create index attempts_created_brin on attempts using brin (created_at);

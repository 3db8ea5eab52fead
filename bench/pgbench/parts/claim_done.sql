with lock as (
    select case when {serialize}::bool then pg_try_advisory_xact_lock(hashtextextended({scope} || '/' || ({owner}) || '/' || ({key}), 0))
                else true end as free
), won as (
    insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
    select {scope}, {owner}, {key}, {fingerprint}, 'done', {result}, now() from lock where free
    on conflict do nothing
    returning true
)
select free as "free!", exists (select from won) as "won!" from lock;

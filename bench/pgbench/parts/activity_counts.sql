select surface, outcome, count(*) as "count!"
from attempts
where org_id = :org::uuid and created_at > now() - interval '24 hours'
group by surface, outcome
order by surface, outcome;

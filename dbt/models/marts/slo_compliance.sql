{{ config(materialized="view") }}

-- Per SLO, entity and day: the I/Os within the SLO's threshold, all of them, the attainment and the share of the
-- day's error budget left (1 - slow I/Os / (1 - objective) x all I/Os; below 0 when the day overspent it).
-- A view: live without a dbt run.
select
    w.slo as slo,
    w.entity as entity,
    w.site as site,
    toDate(w.window_start) as day,
    sum(w.good) as good,
    sum(w.total) as total,
    sum(w.good) / sum(w.total) as attainment,
    any(w.objective) as objective,
    1 - (sum(w.total) - sum(w.good)) / ((1 - any(w.objective)) * sum(w.total)) as budget_left
from {{ ref('stg_slo_windows') }} as w
group by w.slo, w.entity, w.site, day
having sum(w.total) > 0

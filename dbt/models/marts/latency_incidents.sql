{{ config(materialized="view") }}

-- Incidents as an admin sees them (stg_incidents: the view sanlens.incidents, clickhouse/migrations/0017, merges a
-- component's path incidents into one per episode, with the hosts, volumes and arrays it touched), with the customer
-- of their site; open ones first.
-- A view, so incidents are live without a dbt run.
with sites as (
    select site, any(customer) as customer
    from {{ source('sanlens', 'topology') }}
    where kind = 'path'
    group by site
)

select
    i.incident_id as incident_id,
    i.contributor as contributor,
    i.component as component,
    s.customer as customer,
    i.site as site,
    i.started_at as started_at,
    i.ended_at as ended_at,
    i.is_open as is_open,
    dateDiff('second', i.started_at, coalesce(i.ended_at, i.last_window + toIntervalSecond(10))) as duration_s,
    i.excess_us as excess_us,
    i.worst_excess_us as worst_excess_us,
    i.baseline_us as baseline_us,
    i.peak_us as peak_us,
    i.severity as severity,
    i.hosts as hosts,
    i.volumes as volumes,
    i.arrays as arrays,
    i.paths as paths,
    i.ios as ios
from {{ ref('stg_incidents') }} as i
left join sites as s on i.site = s.site
order by is_open desc, started_at desc

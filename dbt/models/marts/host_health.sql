{{ config(materialized="view") }}

-- Per minute and host: % Processor Time, SQL Server's transactions/s and whether an HBA port of the host has a
-- queue depth other than its fleet's setting.
with samples as (
    select
        site,
        host,
        ts,
        metric,
        value,
        toStartOfMinute(ts) as minute,
        sql_instance != '' as from_dmv
    from {{ ref('stg_metrics') }}
    where metric in ('host.cpu_busy', 'sql.transactions')
),

cpu as (
    select
        site,
        host,
        minute,
        avg(value) as cpu_percent
    from samples
    where metric = 'host.cpu_busy'
    group by site, host, minute
),

-- Perfmon (no sql_instance) and the DMV count the same transactions: the larger of the two, never their sum.
transactions as (
    select
        site,
        host,
        minute,
        max(per_s) as transactions_per_s
    from (
        select
            site,
            host,
            minute,
            from_dmv,
            sum(value) / uniqExact(ts) as per_s
        from samples
        where metric = 'sql.transactions'
        group by site, host, minute, from_dmv
    ) as per_source
    group by site, host, minute
),

queue_depths as (
    select
        site,
        host,
        max(differs) as hba_queue_depth_differs
    from {{ ref('hba_queue_depths') }}
    group by site, host
)

select
    c.site as site,
    c.host as host,
    c.minute as minute,
    c.cpu_percent as cpu_percent,
    t.transactions_per_s as transactions_per_s,
    q.hba_queue_depth_differs as hba_queue_depth_differs
from cpu as c
left join transactions as t on c.site = t.site and c.host = t.host and c.minute = t.minute
left join queue_depths as q on c.site = q.site and c.host = q.host

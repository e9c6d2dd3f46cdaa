{{ config(materialized="view") }}

-- Where each path's latency goes per minute, with the path's transport and its host's multipath policy as they were
-- in the version of the path each window was broken down along: the parts, I/O-weighted over the minute's windows,
-- add up to host_us. A window whose version is no longer in the inventory (a replayed span deletes the versions it
-- replaces: ingest/loader/spans.py) stays, its transport and policy 'unknown'. On iSCSI paths the TCP/IP stacks'
-- cost is in unexplained_us: the breakdown's nominal host stack is FC's (flink-jobs/breakdown/README.md).
select
    toStartOfMinute(w.window_start) as period_start,
    w.customer as customer,
    w.site as site,
    w.host as host,
    w.disk as disk,
    w.direction as direction,
    w.array as array,
    w.volume as volume,
    coalesce(nullIf(v.transport, ''), 'unknown') as transport,
    coalesce(nullIf(v.multipath_policy, ''), 'unknown') as multipath_policy,
    sum(w.ios) as ios,
    sum(w.host_us * w.ios) / sum(w.ios) as host_us,
    sum(w.host_queueing_us * w.ios) / sum(w.ios) as host_queueing_us,
    sum(w.fabric_us * w.ios) / sum(w.ios) as fabric_us,
    sum(w.array_us * w.ios) / sum(w.ios) as array_us,
    sum(w.unexplained_us * w.ios) / sum(w.ios) as unexplained_us
from {{ ref('stg_path_latency') }} as w
left join {{ ref('stg_path_versions') }} as v
    on
        w.site = v.site
        and w.host = v.host
        and w.disk = v.disk
        and w.path_valid_from = v.valid_from
group by all

{{ config(materialized="view") }}

-- Each HBA port's queue depth against its fleet's setting: the value most of its customer's HBA ports have (a tie
-- goes to the deeper queue). Differs where the port's is not that value.
with ports as (
    select
        customer,
        site,
        host,
        host_port,
        max(queue_depth) as queue_depth
    from {{ ref('stg_host_paths') }}
    group by customer, site, host, host_port
),

settings as (
    select
        customer,
        argMax(queue_depth, (ports_with_it, queue_depth)) as fleet_queue_depth,
        max(ports_with_it) as ports_at_setting,
        sum(ports_with_it) as fleet_ports
    from (
        select
            customer,
            queue_depth,
            count() as ports_with_it
        from ports
        group by customer, queue_depth
    ) as counted
    group by customer
)

select
    p.customer as customer,
    p.site as site,
    p.host as host,
    p.host_port as host_port,
    p.queue_depth as queue_depth,
    s.fleet_queue_depth as fleet_queue_depth,
    s.ports_at_setting as ports_at_setting,
    s.fleet_ports as fleet_ports,
    p.queue_depth != s.fleet_queue_depth as differs
from ports as p
inner join settings as s on p.customer = s.customer

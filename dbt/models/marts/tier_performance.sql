{{ config(materialized="view") }}

-- Per minute, hybrid array and tier: the tier's IOPS, service time and fill, for each volume (volume = its name)
-- and for the array as a whole (volume = ''): the AO study's "tier and volume specific analysis by utilization,
-- IOPS, and latency". A tier's write_share is where the writes land: its part of the volume's (or array's) writes.
with volume_windows as (
    select
        site,
        array,
        volume,
        window_start,
        tier,
        read_iops as window_read_iops,
        write_iops as window_write_iops,
        read_service_us * read_iops as read_us_x_ios,
        write_service_us * write_iops as write_us_x_ios,
        used_bytes as window_used_bytes
    from {{ ref('int_volume_tier_io_windows') }}
),

array_windows as (
    select
        site,
        array,
        '' as volume,
        window_start,
        tier,
        sum(window_read_iops) as window_read_iops,
        sum(window_write_iops) as window_write_iops,
        sum(read_us_x_ios) as read_us_x_ios,
        sum(write_us_x_ios) as write_us_x_ios,
        sum(window_used_bytes) as window_used_bytes
    from volume_windows
    group by site, array, window_start, tier
),

minutes as (
    select
        site,
        array,
        volume,
        tier,
        toStartOfMinute(window_start) as minute,
        avg(window_read_iops) as read_iops,
        avg(window_write_iops) as write_iops,
        sum(read_us_x_ios) / nullIf(sum(window_read_iops), 0) as read_service_us,
        sum(write_us_x_ios) / nullIf(sum(window_write_iops), 0) as write_service_us,
        (sum(read_us_x_ios) + sum(write_us_x_ios))
        / nullIf(sum(window_read_iops) + sum(window_write_iops), 0) as service_us,
        avg(window_used_bytes) as used_bytes
    from (
        select * from volume_windows
        union all
        select * from array_windows
    ) as windows
    group by site, array, volume, tier, minute
),

capacity as (
    select
        site,
        array,
        tier,
        toStartOfMinute(window_start) as minute,
        avg(capacity_bytes) as capacity_bytes
    from {{ ref('int_array_tier_capacity_windows') }}
    group by site, array, tier, minute
)

select
    m.site as site,
    m.array as array,
    m.volume as volume,
    m.tier as tier,
    m.minute as minute,
    m.read_iops as read_iops,
    m.write_iops as write_iops,
    m.read_iops + m.write_iops as iops,
    m.read_service_us as read_service_us,
    m.write_service_us as write_service_us,
    m.service_us as service_us,
    m.write_iops / nullIf(sum(m.write_iops) over (partition by m.site, m.array, m.volume, m.minute), 0) as write_share,
    m.used_bytes as used_bytes,
    if(m.volume = '', c.capacity_bytes, null) as capacity_bytes,
    if(
        m.volume = '',
        m.used_bytes / nullIf(c.capacity_bytes, 0),
        m.used_bytes / nullIf(sum(m.used_bytes) over (partition by m.site, m.array, m.volume, m.minute), 0)
    ) as fill
from minutes as m
left join capacity as c on m.site = c.site and m.array = c.array and m.tier = c.tier and m.minute = c.minute

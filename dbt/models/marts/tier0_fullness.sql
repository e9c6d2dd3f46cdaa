{{ config(materialized="view") }}

-- Per minute and hybrid array: how full its Tier 0 is, and the warning once it reaches the level where auto-tiering's
-- reserve for new writes runs out (var tier0_warning_fill, dbt_project.yml says why 90 %).
with minutes as (
    select
        site,
        array,
        toStartOfMinute(window_start) as minute,
        avg(used_bytes) as tier0_used_bytes,
        avg(capacity_bytes) as tier0_capacity_bytes
    from {{ ref('int_array_tier_capacity_windows') }}
    where tier = 0
    group by site, array, minute
)

select
    site,
    array,
    minute,
    tier0_used_bytes,
    tier0_capacity_bytes,
    tier0_used_bytes / tier0_capacity_bytes as tier0_fill,
    {{ var('tier0_warning_fill') }} as warning_level,
    tier0_fill >= warning_level as warning
from minutes

-- Each array's firmware timeline: one row per version, valid from valid_from to the next one.
select
    array,
    customer,
    site,
    model,
    firmware,
    valid_from
from {{ source('sanlens', 'topology') }} final
where kind = 'array'

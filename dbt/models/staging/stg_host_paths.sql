-- Each host path of the inventory in its latest version: the HBA port it leaves by and that port's queue depth.
select
    customer,
    site,
    host,
    disk,
    argMax(host_port, valid_from) as host_port,
    argMax(queue_depth, valid_from) as queue_depth,
    max(valid_from) as latest_valid_from
from {{ source('sanlens', 'topology') }} final
where kind = 'path'
group by customer, site, host, disk

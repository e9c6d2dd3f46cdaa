-- Every version of each host path of the inventory, from its valid_from on: the array volume it reaches, how it
-- reaches it (transport: fc or iscsi) and the load-balance policy of the host's MPIO DSM for the disk. Versions
-- loaded before the inventory carried the two (migration 0022) say 'unknown'.
select
    customer,
    site,
    host,
    disk,
    valid_from,
    array,
    volume,
    if(transport = '', 'unknown', transport) as transport,
    if(multipath_policy = '', 'unknown', multipath_policy) as multipath_policy
from {{ source('sanlens', 'topology') }} final
where kind = 'path'

-- Per 10 s window, the host's I/O-weighted latency and the array's service time on its paths to each volume.
select
    site, array, volume, host, window_start,
    groupUniqArray(disk) as disks,
    sum(host_us * ios) / sum(ios) as host_us,
    sum(array_us * ios) / sum(ios) as array_us
from {{ ref('stg_path_latency') }}
group by site, array, volume, host, window_start

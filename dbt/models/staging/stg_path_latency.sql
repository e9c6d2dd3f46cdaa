-- The breakdown job's windows (sanlens.path_latency), one row per window, path and direction
-- (FINAL: re-delivered windows collapse, and each window keeps its path as of the window).
select
    window_start,
    window_s,
    customer,
    site,
    host,
    disk,
    direction,
    host_port,
    switch,
    host_switch_port,
    array_switch_port,
    array,
    volume,
    path_valid_from,
    ios,
    host_us,
    host_queueing_us,
    fabric_us,
    array_us,
    unexplained_us,
    hba_busy,
    port_stall,
    port_discards
from {{ source('sanlens', 'path_latency') }} final

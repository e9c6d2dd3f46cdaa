-- Where each path's latency goes, per minute: the host's latency and its parts, I/O-weighted over the
-- minute's windows, so the parts still add up to host_us. `port` is the path's switch port on the
-- host's side, `array_port` the one towards the array.
select
    toStartOfMinute(w.window_start) as period_start,
    w.customer as customer,
    w.site as site,
    w.host as host,
    w.disk as disk,
    w.direction as direction,
    w.array as array,
    w.volume as volume,
    w.switch as switch,
    w.host_switch_port as port,
    w.array_switch_port as array_port,
    sum(w.ios) as ios,
    sum(w.host_us * w.ios) / sum(w.ios) as host_us,
    sum(w.host_queueing_us * w.ios) / sum(w.ios) as host_queueing_us,
    sum(w.fabric_us * w.ios) / sum(w.ios) as fabric_us,
    sum(w.array_us * w.ios) / sum(w.ios) as array_us,
    sum(w.unexplained_us * w.ios) / sum(w.ios) as unexplained_us,
    max(w.hba_busy) as hba_busy,
    max(w.port_stall) as port_stall
from {{ ref('stg_path_latency') }} as w
group by all

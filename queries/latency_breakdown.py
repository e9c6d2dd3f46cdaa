"""Where a host's I/O time goes: what it measured on each path, split into the host's queueing, the fabric, the
array and what none of them explains (the breakdown job's windows, sanlens.path_latency, FINAL; per minute, the dbt
view sanlens_marts.latency_breakdown). `./sanlens explain` and the report read them."""

from __future__ import annotations

PARTS = ("host_queueing", "fabric", "array", "unexplained")

# Per disk and direction of host {host} (or of its disk {disk}; '' for every disk), over {start} to {end} but the
# spans left out ({out_from} to {out_to}, epoch seconds: the incidents'), I/O-weighted: what it measured and each part.
PER_PATH = f"""
SELECT w.disk AS disk, w.direction AS direction,
    concat(any(w.array), ':', any(w.volume)) AS volume,
    concat(any(w.switch), ' ', any(w.host_switch_port), ' > ', any(w.array_switch_port)) AS switch_ports,
    count() AS windows, sum(w.ios) AS ios, sum(w.host_us * w.ios) / sum(w.ios) AS measured_us,
    {", ".join(f"sum(w.{p}_us * w.ios) / sum(w.ios) AS {p}_us" for p in PARTS)}
FROM sanlens.path_latency AS w FINAL
WHERE w.host = {{host:String}} AND ({{disk:String}} = '' OR w.disk = {{disk:String}})
    AND w.window_start >= {{start:DateTime64(3)}} AND w.window_start < {{end:DateTime64(3)}}
    AND NOT arrayExists((f, t) -> toUnixTimestamp(w.window_start) >= f AND toUnixTimestamp(w.window_start) < t,
        {{out_from:Array(Int64)}}, {{out_to:Array(Int64)}})
GROUP BY disk, direction ORDER BY disk, direction
"""
# Host {host}'s latency per minute, each part I/O-weighted over its paths: the parts add up to what it measured.
PER_MINUTE = f"""
SELECT period_start, {", ".join(f"sum({p}_us * ios) / sum(ios) AS {p}_us" for p in PARTS)}
FROM sanlens_marts.latency_breakdown
WHERE host = {{h:String}}
GROUP BY period_start ORDER BY period_start"""
LAST_WINDOW_END = "SELECT max(window_start) + INTERVAL 10 SECOND FROM sanlens.path_latency WHERE host = {host:String}"
HOSTS = "SELECT DISTINCT host FROM sanlens.path_latency"
DISKS = "SELECT DISTINCT disk FROM sanlens.path_latency WHERE host = {host:String} ORDER BY disk"

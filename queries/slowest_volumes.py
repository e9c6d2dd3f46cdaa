"""The volumes with the slowest writes: p99 of the array-reported write service time over everything the hourly
rollups hold (sanlens.service_time_hist_1h, FINAL; interpolated in its bucket by serviceTimeQuantile). The report
charts them."""

from __future__ import annotations

# The {n} volumes with the highest p99 write service time, in ms, the highest first.
BY_P99_WRITE = """
SELECT concat(array, ' / ', volume) AS name, serviceTimeQuantile(h.1, h.2, 0.99) AS p99
FROM (
    SELECT array, volume, sumMap([bucket], [ios]) AS h FROM sanlens.service_time_hist_1h FINAL
    WHERE source = 'array' AND direction = 'write' GROUP BY array, volume
)
ORDER BY p99 DESC LIMIT {n:UInt32}"""

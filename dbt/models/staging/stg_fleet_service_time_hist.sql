-- Hourly service-time histograms of the install base per array model, firmware and direction (arrays and
-- volumes summed), with the arrays behind each bucket and each bucket's upper bound (NULL for the
-- open-ended bucket 31). No FINAL: the rollup swaps whole days in (ingest/loader/rollups.py), so the
-- table never holds two versions of a row.
select
    period_start,
    array_model,
    firmware,
    direction,
    bucket,
    if(bucket = 31, null, serviceTimeBucketUpperMs(bucket)) as bucket_upper_ms,
    ios,
    arrays
from {{ source('sanlens', 'service_time_hist_fleet_1h') }}

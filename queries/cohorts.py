"""The install base's cohorts: per array model, firmware and direction, the arrays behind it, its share of I/Os
within 0.125 ms (buckets 0 to 4, cumulative) three ways: weighted by I/O (the cohort's I/Os pooled), weighted by
array (each array's own share, averaged) and the spread of the arrays' own shares (lowest, quartiles, highest); its
share of I/Os in the bucket of 0.0625 to 0.125 ms (bucket 4 alone, the bar the Express Writes study reads: about 10%
on 3.1.3, 40% on 3.2.1) weighted by I/O and by array; and the busiest array and its part of the cohort's I/Os.
An overloaded array that carries most of a cohort's I/Os drags the I/O-weighted share; the array-weighted share and
the spread show it. Models are never pooled: a hybrid array's service times are its media's, not its firmware's.

The one query text `./sanlens report` (over everything the store holds) and the install-base dashboard (over its
time range and selection) run; sanlens_marts.install_base_cohorts holds the same figures per hour."""

from __future__ import annotations

from ingest.buckets import BUCKET_0_125_MS

COLUMNS = "array_model, firmware, direction, array, bucket"  # what `rows` must return, with ios


def every_array(where: str = "1") -> str:
    """The rows of the cohort query from every array's hourly histograms where `where` holds."""
    return f"SELECT {COLUMNS}, ios FROM sanlens.service_time_hist_array_1h FINAL WHERE source = 'array' AND {where}"


def figures(rows: str) -> str:
    """Per cohort over `rows` (a query of COLUMNS and ios): writes first, then by model and firmware."""
    within = "array_within_ios / array_ios"
    return f"""
SELECT array_model, firmware, direction,
    count() AS arrays,
    sum(array_ios) AS ios,
    sum(array_in_bucket_ios) / ios AS share_0_0625_to_0_125_ms,
    avg(array_in_bucket_ios / array_ios) AS share_0_0625_to_0_125_ms_array_mean,
    sum(array_within_ios) / ios AS share_within_0_125_ms,
    avg({within}) AS share_within_0_125_ms_array_mean,
    min({within}) AS share_within_0_125_ms_array_min,
    quantileExactInclusive(0.25)({within}) AS share_within_0_125_ms_array_p25,
    quantileExactInclusive(0.5)({within}) AS share_within_0_125_ms_array_median,
    quantileExactInclusive(0.75)({within}) AS share_within_0_125_ms_array_p75,
    max({within}) AS share_within_0_125_ms_array_max,
    argMax(array, array_ios) AS busiest_array,
    max(array_ios) / ios AS busiest_array_ios_share
FROM (
    SELECT array_model, firmware, direction, array,
        sumIf(ios, bucket = {BUCKET_0_125_MS}) AS array_in_bucket_ios,
        sumIf(ios, bucket <= {BUCKET_0_125_MS}) AS array_within_ios,
        sum(ios) AS array_ios
    FROM (
{rows}
    )
    GROUP BY array_model, firmware, direction, array
    HAVING array_ios > 0
)
GROUP BY array_model, firmware, direction
ORDER BY direction DESC, array_model, firmware"""


def bucket_label(bucket: str) -> str:
    """A bucket by its range, lower to upper bound ("0.0625–0.125 ms"; the first from 0, the last "> 8388608 ms"):
    a bar is the share in its bucket alone, which "<= 0.125 ms" would read as the share within 0.125 ms."""
    lower, upper = f"toString(serviceTimeBucketLowerMs({bucket}))", f"toString(serviceTimeBucketUpperMs({bucket}))"
    return f"if({bucket} = 31, concat('> ', {lower}, ' ms'), concat({lower}, '–', {upper}, ' ms'))"


# Per array model, firmware and bucket over everything the dbt view holds for direction {d}: the share of the I/Os.
HISTOGRAM = f"""
SELECT array_model, firmware, bucket, sum(ios) / sum(sum(ios)) OVER (PARTITION BY array_model, firmware) AS share,
    {bucket_label("bucket")} AS service_time
FROM sanlens_marts.install_base_histogram
WHERE direction = {{d:String}}
GROUP BY array_model, firmware, bucket
HAVING sum(ios) > 0
ORDER BY array_model, firmware, bucket"""
HAS_HISTOGRAMS = "SELECT count() FROM sanlens_marts.install_base_histogram"
# Each array model's media (ssd, hybrid), from the inventory.
MEDIA = "SELECT model, any(media) FROM sanlens.topology FINAL WHERE kind = 'array' GROUP BY model"
# Per array model, firmware and direction of arrays {arrays} from {a} to {b} (whole minutes): the arrays, their I/Os
# and the share in the bucket of 0.0625 to 0.125 ms; the demo sets it beside the simulator's own histograms.
OF_ARRAYS_IN_SPAN = f"""
SELECT array_model, firmware, direction, uniqExact(array), sum(ios), sumIf(ios, bucket = {BUCKET_0_125_MS}) / sum(ios)
FROM sanlens.service_time_hist_1m FINAL
WHERE source = 'array' AND array IN {{arrays:Array(String)}}
  AND period_start BETWEEN toStartOfMinute({{a:DateTime}}) AND {{b:DateTime}}
GROUP BY array_model, firmware, direction ORDER BY direction, array_model, firmware"""

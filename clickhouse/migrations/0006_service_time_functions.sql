-- Service-time percentiles from a merged histogram, one definition for dbt, Grafana and the report.
-- Bucket n (0..31) holds (2^(n-8), 2^(n-7)] ms; bucket 0 starts at 0 and bucket 31 is open-ended.
-- serviceTimeQuantile(buckets, counts, q): buckets ascending with their I/O counts, as
-- sumMap([bucket], [ios]) gives them. The value is interpolated linearly inside the bucket that holds
-- the q-th I/O; the true percentile lies in the same bucket, so the error is at most the bucket's
-- width (a factor of 2; 2^-7 ms in bucket 0). In bucket 31 the lower bound, 2^23 ms, is returned.
CREATE FUNCTION IF NOT EXISTS serviceTimeBucketLowerMs AS (n) -> if(n = 0, 0., pow(2, n - 8));

CREATE FUNCTION IF NOT EXISTS serviceTimeBucketUpperMs AS (n) -> if(n = 31, inf, pow(2, n - 7));

CREATE FUNCTION IF NOT EXISTS serviceTimeQuantileAt AS (buckets, counts, q, i) ->
    if(buckets[i] = 31, serviceTimeBucketLowerMs(31),
       serviceTimeBucketLowerMs(buckets[i])
       + (serviceTimeBucketUpperMs(buckets[i]) - serviceTimeBucketLowerMs(buckets[i]))
         * (q * arraySum(counts) - if(i = 1, 0, arrayCumSum(counts)[i - 1])) / counts[i]);

CREATE FUNCTION IF NOT EXISTS serviceTimeQuantile AS (buckets, counts, q) ->
    if(arraySum(counts) = 0, nan,
       serviceTimeQuantileAt(buckets, counts, q, arrayFirstIndex(c -> c >= q * arraySum(counts), arrayCumSum(counts))));

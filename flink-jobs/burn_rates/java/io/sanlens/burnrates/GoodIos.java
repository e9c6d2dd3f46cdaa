package io.sanlens.burnrates;

import org.apache.flink.table.functions.ScalarFunction;

/**
 * good_ios(buckets, ios, threshold_ms): of a window's histogram (I/Os per 3PAR bucket), the I/Os at or under the
 * threshold: all of a bucket below it, none above, linearly in the bucket it falls in (at most that bucket's
 * I/Os are misplaced). Bucket n holds (2^(n-8), 2^(n-7)] ms, bucket 0 from 0; the open-ended bucket 31 is taken
 * as (2^23, 2^24]. A window's buckets arrive as one row (telemetry.histograms), so each SLO's good I/Os are
 * computed once per window, not once per bucket row.
 */
public final class GoodIos extends ScalarFunction {
    public Double eval(Integer[] buckets, Long[] ios, Double thresholdMs) {
        if (buckets == null || ios == null || thresholdMs == null) return null;
        double good = 0.0;
        for (int i = 0; i < Math.min(buckets.length, ios.length); i++) {
            if (buckets[i] == null || ios[i] == null) continue;
            good += ios[i] * share(buckets[i], thresholdMs);
        }
        return good;
    }

    /** The share of bucket `bucket`'s I/Os at or under `thresholdMs`. */
    static double share(int bucket, double thresholdMs) {
        double lower = bucket == 0 ? 0.0 : Math.pow(2.0, bucket - 8);
        double upper = Math.pow(2.0, bucket - 7);
        return Math.min(Math.max((thresholdMs - lower) / (upper - lower), 0.0), 1.0);
    }
}

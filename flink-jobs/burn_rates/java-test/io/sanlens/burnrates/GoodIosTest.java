package io.sanlens.burnrates;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/**
 * A window's good I/Os under an SLO's threshold, from its histogram on the 3PAR bounds: bucket n holds
 * (2^(n-8), 2^(n-7)] ms, bucket 0 from 0 ms, bucket 31 taken as (2^23, 2^24] ms.
 */
class GoodIosTest {
    static final Integer[] BUCKETS = {0, 4, 5, 6, 8, 31};
    static final Long[] IOS = {10L, 200L, 300L, 50L, 7L, 1L};

    static double good(double thresholdMs) {
        return new GoodIos().eval(BUCKETS, IOS, thresholdMs);
    }

    @Test
    void aThresholdOnABucketsUpperBoundCountsItWholeAndTheNextNotAtAll() {
        assertEquals(210.0, good(0.125), 1e-9); // buckets 0 and 4, (0.0625, 0.125] ms
        assertEquals(510.0, good(0.25), 1e-9); // and bucket 5
    }

    @Test
    void insideABucketItsIosCountLinearly() {
        assertEquals(10 + 200 * 0.44, good(0.09), 1e-9); // (0.09 - 0.0625) / 0.0625 of bucket 4
        assertEquals(10 * 0.128, good(0.001), 1e-9); // bucket 0 spans [0, 0.0078125] ms
        assertEquals(10 + 200 + 300 + 50 + 7 * 0.5, good(1.5), 1e-9); // half of bucket 8, (1, 2] ms
    }

    @Test
    void theOpenEndedBucketEndsAt2To24Ms() {
        assertEquals(567.0, good(Math.pow(2, 23)), 1e-9);
        assertEquals(567.5, good(1.5 * Math.pow(2, 23)), 1e-9);
        assertEquals(568.0, good(Math.pow(2, 24)), 1e-9);
    }

    @Test
    void missingValuesCountNothing() {
        assertNull(new GoodIos().eval(null, IOS, 1.0));
        assertNull(new GoodIos().eval(BUCKETS, IOS, null));
        assertEquals(200.0, new GoodIos().eval(new Integer[] {null, 4, 5}, new Long[] {10L, 200L}, 0.125), 1e-9);
        assertEquals(568.0, new TotalIos().eval(IOS), 1e-9);
        assertEquals(7.0, new TotalIos().eval(new Long[] {null, 7L}), 1e-9);
    }
}

package io.sanlens.burnrates;

import org.apache.flink.table.functions.ScalarFunction;

/** total_ios(ios): the I/Os of a window's histogram, all buckets. */
public final class TotalIos extends ScalarFunction {
    public Double eval(Long[] ios) {
        if (ios == null) return null;
        double total = 0.0;
        for (Long n : ios) if (n != null) total += n;
        return total;
    }
}

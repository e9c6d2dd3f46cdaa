package io.sanlens.burnrates;

/**
 * What the burn-rate evaluator keeps per SLO and entity (Flink-managed state), apart from its Rings: the minute
 * being gathered, the cumulative good and total I/Os so far, where the rings' next slots are (a window's counts
 * are a difference of two cumulative sums), and which severities are firing. Public fields and a default constructor, so Flink stores it as a structured type.
 */
public class Budget {
    public Long minute; // epoch minute being gathered
    public double minuteGood;
    public double minuteTotal;

    public double cumGood; // since the first minute
    public double cumTotal;
    public int minuteNext; // the next slot of the minutes' ring (Rings)
    public long minutes; // minutes closed

    public long day; // epoch day of the last minute closed
    public int dayNext; // the next slot of the days' ring
    public long days;

    public boolean[] firing = new boolean[0]; // per severity, in the evaluator's order
}

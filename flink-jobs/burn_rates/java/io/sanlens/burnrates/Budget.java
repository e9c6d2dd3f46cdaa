package io.sanlens.burnrates;

/**
 * What the burn-rate evaluator keeps per SLO and entity (Flink-managed state): the minute being gathered,
 * the cumulative good and total I/Os at the end of each of the last minutes (a ring: a window's counts are a
 * difference of two), the same at the end of each of the last days (the period's budget), and which
 * severities are firing. Public fields and a default constructor, so Flink stores it as a structured type.
 */
public class Budget {
    public Long minute; // epoch minute being gathered
    public double minuteGood;
    public double minuteTotal;

    public double cumGood; // since the first minute
    public double cumTotal;
    public double[] minuteGoodRing = new double[0]; // cumulative at the end of each minute
    public double[] minuteTotalRing = new double[0];
    public int minuteNext;
    public long minutes; // minutes closed

    public long day; // epoch day of the last minute closed
    public double[] dayGoodRing = new double[0]; // cumulative at the end of each day
    public double[] dayTotalRing = new double[0];
    public int dayNext;
    public long days;

    public boolean[] firing = new boolean[0]; // per severity, in the evaluator's order
}

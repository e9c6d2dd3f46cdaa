package io.sanlens.burnrates;

/** One evaluation of one SLO and entity at the end of a minute, for one severity: firing or resolved. */
public final class SloAlert {
    public final String severity, state;
    public final long at; // the end of the minute evaluated, epoch ms
    public final double[] burnRates; // over the evaluator's windows, in its order
    public final double budgetLeft; // of the period's error budget, by the I/Os of the period so far
    public final double good, total; // I/Os of the period so far

    SloAlert(String severity, String state, long at, double[] burnRates, double budgetLeft, double good,
             double total) {
        this.severity = severity;
        this.state = state;
        this.at = at;
        this.burnRates = burnRates;
        this.budgetLeft = budgetLeft;
        this.good = good;
        this.total = total;
    }
}

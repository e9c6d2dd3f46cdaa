package io.sanlens.burnrates;

import java.time.Instant;

import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.ArgumentTrait;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.StateHint;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.functions.ProcessTableFunction;
import org.apache.flink.types.Row;

/**
 * evaluate_burn_rates(input => TABLE slo_ios PARTITION BY (slo, entity), rules => '...', period_days => ...):
 * BurnRates as a process table function: its Budget in Flink's keyed value state, its Rings in keyed map state
 * (a minute reads a handful of blocks; a value state would read and write the whole 3 days at every row).
 * Input columns: window_ms, good, total, objective, site. One output row per severity that fires or resolves
 * at the end of a minute, after the partition columns; burn rates over 5m, 30m, 1h, 2h, 6h, 1d, 3d.
 */
@DataTypeHint("ROW<ts TIMESTAMP_LTZ(3), site STRING, severity STRING, state STRING, burn_5m DOUBLE, "
        + "burn_30m DOUBLE, burn_1h DOUBLE, burn_2h DOUBLE, burn_6h DOUBLE, burn_1d DOUBLE, burn_3d DOUBLE, "
        + "budget_left DOUBLE, period_good DOUBLE, period_total DOUBLE>")
public final class EvaluateBurnRates extends ProcessTableFunction<Row> {
    private static final long serialVersionUID = 1L;

    private transient BurnRates evaluator; // the arguments are literals: the same for every row

    public void eval(
            @StateHint(name = "budget", ttl = "31 d") Budget budget,
            @StateHint(name = "minutes", ttl = "31 d") MapView<Integer, double[]> minutes,
            @StateHint(name = "days", ttl = "31 d") MapView<Integer, double[]> days,
            @ArgumentHint(value = ArgumentTrait.SET_SEMANTIC_TABLE, name = "input") Row input,
            @ArgumentHint(name = "rules") String rules,
            @ArgumentHint(name = "period_days") Integer periodDays) {
        if (evaluator == null) evaluator = new BurnRates(rules, periodDays);
        SloAlert[] alerts = evaluator.add(
                budget,
                new Rings(minutes, days),
                input.<Long>getFieldAs("window_ms"),
                input.<Double>getFieldAs("good"),
                input.<Double>getFieldAs("total"),
                input.<Double>getFieldAs("objective"));
        for (SloAlert a : alerts) {
            double[] r = a.burnRates;
            collect(Row.of(Instant.ofEpochMilli(a.at), input.getFieldAs("site"), a.severity, a.state, r[0], r[1],
                    r[2], r[3], r[4], r[5], r[6], a.budgetLeft, a.good, a.total));
        }
    }
}

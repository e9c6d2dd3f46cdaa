package io.sanlens.burnrates;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Multiwindow, multi-burn-rate alerts of one SLO on one entity (README.md), from its good and total I/Os window
 * by window. Pure logic over a Budget and its Rings; the process table function runs it as Flink state. An
 * entity's windows arrive in order; a window of a minute already evaluated counts in the minute being gathered
 * (no I/O is lost; it shifts by the time it came late).
 *
 * At the end of every minute: each window's error ratio (bad / total I/Os of the minutes it covers that have
 * data: a window longer than the data so far covers the data) over the budget (1 - objective) is its burn
 * rate. A rule fires while the burn rates over both its long and its short window reach its rate; a severity
 * is firing while one of its rules fires. A firing severity is reported at every minute (an alert that is not
 * re-posted expires in Alertmanager), a resolved one once.
 */
public final class BurnRates {
    public static final int[] WINDOWS_S = {300, 1800, 3600, 7200, 21600, 86400, 259200};
    static final int RING = 259200 / 60; // minutes of the longest window

    public final String[] severities; // distinct, in the order of the rules
    private final String[] ruleSeverity;
    private final double[] ruleRate;
    private final int[] ruleLong, ruleShort; // indexes into WINDOWS_S
    private final int periodDays;

    /** rules: "severity:rate:long_s:short_s" separated by commas, e.g. "page:14.4:3600:300,ticket:3:86400:7200". */
    public BurnRates(String rules, int periodDays) {
        String[] parts = rules.split(",");
        ruleSeverity = new String[parts.length];
        ruleRate = new double[parts.length];
        ruleLong = new int[parts.length];
        ruleShort = new int[parts.length];
        List<String> distinct = new ArrayList<>();
        for (int i = 0; i < parts.length; i++) {
            String[] f = parts[i].trim().split(":");
            ruleSeverity[i] = f[0];
            ruleRate[i] = Double.parseDouble(f[1]);
            ruleLong[i] = window(Integer.parseInt(f[2]));
            ruleShort[i] = window(Integer.parseInt(f[3]));
            if (!distinct.contains(f[0])) distinct.add(f[0]);
        }
        severities = distinct.toArray(new String[0]);
        this.periodDays = periodDays;
    }

    private static int window(int seconds) {
        for (int i = 0; i < WINDOWS_S.length; i++) if (WINDOWS_S[i] == seconds) return i;
        throw new IllegalArgumentException("no burn-rate window of " + seconds + " s");
    }

    /** The entity's good and total I/Os in one window (epoch ms): the alerts of the minutes it closes, if any. */
    public SloAlert[] add(Budget b, Rings r, long windowMs, double good, double total, double objective) {
        long minute = Math.floorDiv(windowMs, 60_000L);
        if (b.minute != null && minute < b.minute) minute = b.minute; // late: it counts in the minute gathered
        SloAlert[] out = new SloAlert[0];
        if (b.minute != null && minute > b.minute) {
            long gap = Math.min(minute - b.minute, RING + 1);
            for (long m = 0; m < gap; m++) close(b, r, b.minute + m);
            out = evaluate(b, r, objective, (b.minute + 1) * 60_000L);
            b.minuteGood = 0;
            b.minuteTotal = 0;
        }
        b.minute = minute;
        b.minuteGood += good;
        b.minuteTotal += total;
        return out;
    }

    private void close(Budget b, Rings r, long minute) {
        if (b.firing.length == 0) {
            b.firing = new boolean[severities.length];
            b.day = Math.floorDiv(minute, 1440L);
        }
        b.cumGood += b.minuteGood;
        b.cumTotal += b.minuteTotal;
        b.minuteGood = 0; // a gap's minutes add nothing
        b.minuteTotal = 0;
        r.minute(b.minuteNext, b.cumGood, b.cumTotal);
        b.minuteNext = (b.minuteNext + 1) % RING;
        b.minutes++;
        long day = Math.floorDiv(minute + 1, 1440L); // the day the next minute starts
        if (day > b.day) {
            r.day(b.dayNext, b.cumGood, b.cumTotal);
            b.dayNext = (b.dayNext + 1) % periodDays;
            b.days++;
            b.day = day;
        }
    }

    /** Good and total I/Os of the last `minutes` closed minutes (all of them if there are fewer). */
    private static double[] lastMinutes(Budget b, Rings r, int minutes) {
        if (b.minutes <= minutes) return new double[] {b.cumGood, b.cumTotal};
        double[] before = r.minute(Math.floorMod(b.minuteNext - 1 - minutes, RING)); // just before the window
        return new double[] {b.cumGood - before[0], b.cumTotal - before[1]};
    }

    private double[] period(Budget b, Rings r) {
        if (b.days < periodDays) return new double[] {b.cumGood, b.cumTotal};
        double[] start = r.day(b.dayNext); // the oldest day boundary kept: the period's start
        return new double[] {b.cumGood - start[0], b.cumTotal - start[1]};
    }

    public double[] burnRates(Budget b, Rings r, double objective) {
        double[] rates = new double[WINDOWS_S.length];
        for (int w = 0; w < WINDOWS_S.length; w++) {
            double[] gt = lastMinutes(b, r, WINDOWS_S[w] / 60);
            rates[w] = gt[1] > 0 ? (1 - gt[0] / gt[1]) / (1 - objective) : 0;
        }
        return rates;
    }

    private SloAlert[] evaluate(Budget b, Rings r, double objective, long at) {
        double[] rates = burnRates(b, r, objective);
        double[] p = period(b, r);
        double budgetLeft = p[1] > 0 ? 1 - (p[1] - p[0]) / ((1 - objective) * p[1]) : 1;
        List<SloAlert> out = new ArrayList<>();
        for (int s = 0; s < severities.length; s++) {
            boolean fires = false;
            for (int rule = 0; rule < ruleSeverity.length; rule++) {
                fires |= ruleSeverity[rule].equals(severities[s])
                        && rates[ruleLong[rule]] >= ruleRate[rule] && rates[ruleShort[rule]] >= ruleRate[rule];
            }
            if (fires || b.firing[s]) {
                out.add(new SloAlert(severities[s], fires ? "firing" : "resolved", at, Arrays.copyOf(rates,
                        rates.length), budgetLeft, p[0], p[1]));
            }
            b.firing[s] = fires;
        }
        return out.toArray(new SloAlert[0]);
    }
}

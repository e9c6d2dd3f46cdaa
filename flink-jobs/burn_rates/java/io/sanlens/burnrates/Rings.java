package io.sanlens.burnrates;

/**
 * Where the evaluator keeps its cumulative good and total I/Os at the end of each of the last minutes and days:
 * slot by slot, so that a minute's evaluation reads a handful of slots instead of the whole history (in the
 * process table function, Flink map state; in tests, arrays).
 */
public interface Rings {
    double[] minute(int slot); // {good, total}, zeros if never written

    void minute(int slot, double good, double total);

    double[] day(int slot);

    void day(int slot, double good, double total);

    /** The rings in two arrays, for tests and small uses. */
    final class InMemory implements Rings {
        private final double[][] minutes = new double[BurnRates.RING][], days = new double[400][];

        public double[] minute(int slot) {
            return minutes[slot] == null ? new double[2] : minutes[slot];
        }

        public void minute(int slot, double good, double total) {
            minutes[slot] = new double[] {good, total};
        }

        public double[] day(int slot) {
            return days[slot] == null ? new double[2] : days[slot];
        }

        public void day(int slot, double good, double total) {
            days[slot] = new double[] {good, total};
        }
    }
}

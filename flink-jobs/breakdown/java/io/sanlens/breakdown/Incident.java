package io.sanlens.breakdown;

/** One state of an incident: emitted when it opens, at every window it lasts, and when it closes. */
public final class Incident {
    public final String site, severity;
    public final long startedAt, lastWindow, ios;
    public final Long endedAt; // null while open
    public final int windows;
    public final double baselineUs, excessUs, peakUs;

    Incident(String site, long startedAt, Long endedAt, long lastWindow, int windows, long ios, double baselineUs,
             double excessUs, double peakUs, String severity) {
        this.site = site;
        this.startedAt = startedAt;
        this.endedAt = endedAt;
        this.lastWindow = lastWindow;
        this.windows = windows;
        this.ios = ios;
        this.baselineUs = baselineUs;
        this.excessUs = excessUs;
        this.peakUs = peakUs;
        this.severity = severity;
    }
}

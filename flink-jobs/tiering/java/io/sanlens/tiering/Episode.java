package io.sanlens.tiering;

/** One state of a tier-migration episode: emitted when it is confirmed, at every window it lasts, and when it settles. */
public final class Episode {
    public final String site, direction;
    public final long startedAt, detectedAt, lastWindow;
    public final Long settledAt; // null while the share still moves
    public final int windows;
    public final double tier0ShareBefore, tier0ShareReached, tier0BytesReached, noise, pageMovesUp, pageMovesDown;

    Episode(String site, String direction, long startedAt, long detectedAt, Long settledAt, long lastWindow,
            int windows, double tier0ShareBefore, double tier0ShareReached, double tier0BytesReached, double noise,
            double pageMovesUp, double pageMovesDown) {
        this.site = site;
        this.direction = direction;
        this.startedAt = startedAt;
        this.detectedAt = detectedAt;
        this.settledAt = settledAt;
        this.lastWindow = lastWindow;
        this.windows = windows;
        this.tier0ShareBefore = tier0ShareBefore;
        this.tier0ShareReached = tier0ShareReached;
        this.tier0BytesReached = tier0BytesReached;
        this.noise = noise;
        this.pageMovesUp = pageMovesUp;
        this.pageMovesDown = pageMovesDown;
    }
}

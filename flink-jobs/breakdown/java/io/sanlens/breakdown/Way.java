package io.sanlens.breakdown;

/**
 * The incident detector's tracks of one version of a path (Flink-managed state of DetectIncidents): one Track for each
 * contributor on its way, in DetectIncidents.SLOTS' order. Public fields and a default constructor, so Flink stores
 * it as a structured type: one state entry read and written per path window, not one per contributor.
 */
public class Way {
    public Track host = new Track();
    public Track hostPort = new Track();
    public Track arrayPort = new Track();
    public Track array = new Track();

    Track[] tracks() {
        return new Track[] {host, hostPort, arrayPort, array};
    }
}

package io.sanlens.breakdown;

import org.apache.flink.types.Row;

/**
 * A host disk's window on its path, waiting in JoinWindowParts' state for the parts of its window it needs: the
 * path's columns, the keys of the four parts, and the values of those already found. Public fields and a default
 * constructor, so Flink stores it as a structured type.
 */
public class WaitingPath {
    public String customer;
    public String host;
    public String disk;
    public String direction;
    public String hostPort;
    public Integer queueDepth;
    public String switchName;
    public String hostSwitchPort;
    public String arraySwitchPort;
    public Integer hops;
    public Double distanceKm;
    public String array;
    public String volume;
    public Long validFromMs;
    public Double hostUs;
    public Long ios;

    // the parts' keys (as the parts' rows name them) and, once found, their values
    public String arrayPart;
    public String hbaPart;
    public String hostPortPart;
    public String arrayPortPart;
    public double[] arrayValues;
    public double[] hbaValues;
    public double[] hostPortValues;
    public double[] arrayPortValues;

    static WaitingPath of(Row row) {
        WaitingPath w = new WaitingPath();
        w.customer = row.getFieldAs("customer");
        w.host = row.getFieldAs("host");
        w.disk = row.getFieldAs("disk");
        w.direction = row.getFieldAs("direction");
        w.hostPort = row.getFieldAs("host_port");
        w.queueDepth = row.getFieldAs("queue_depth");
        w.switchName = row.getFieldAs("switch");
        w.hostSwitchPort = row.getFieldAs("host_switch_port");
        w.arraySwitchPort = row.getFieldAs("array_switch_port");
        w.hops = row.getFieldAs("hops");
        w.distanceKm = row.getFieldAs("distance_km");
        w.array = row.getFieldAs("array");
        w.volume = row.getFieldAs("volume");
        java.time.Instant validFrom = row.getFieldAs("valid_from");
        w.validFromMs = validFrom == null ? null : validFrom.toEpochMilli();
        w.hostUs = row.getFieldAs("host_us");
        w.ios = row.getFieldAs("ios");
        w.arrayPart = row.getFieldAs("array_part");
        w.hbaPart = row.getFieldAs("hba_part");
        w.hostPortPart = row.getFieldAs("host_port_part");
        w.arrayPortPart = row.getFieldAs("array_port_part");
        return w;
    }
}

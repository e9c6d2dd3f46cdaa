package io.sanlens.breakdown;

import java.time.Instant;

import org.apache.flink.types.Row;

/**
 * In JoinWindowParts' state: a version of a path (its columns, and the keys of its parts without the window), a
 * host disk's window waiting for its path's versions (the window's own columns and when it came), or the two
 * together, a path window waiting for the parts of its window it needs (the parts' keys, and the values of those
 * already found). Public fields and a default constructor, so Flink stores it as a structured type.
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
    public long windowMs;
    public long arrivedMs;
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

    static WaitingPath version(Row row) {
        WaitingPath v = new WaitingPath();
        v.customer = row.getFieldAs("customer");
        v.host = row.getFieldAs("host");
        v.disk = row.getFieldAs("disk");
        v.hostPort = row.getFieldAs("host_port");
        v.queueDepth = row.getFieldAs("queue_depth");
        v.switchName = row.getFieldAs("switch");
        v.hostSwitchPort = row.getFieldAs("host_switch_port");
        v.arraySwitchPort = row.getFieldAs("array_switch_port");
        v.hops = row.getFieldAs("hops");
        v.distanceKm = row.getFieldAs("distance_km");
        v.array = row.getFieldAs("array");
        v.volume = row.getFieldAs("volume");
        Instant validFrom = row.getFieldAs("valid_from");
        v.validFromMs = validFrom == null ? null : validFrom.toEpochMilli();
        v.arrayPart = row.getFieldAs("array_part");
        v.hbaPart = row.getFieldAs("hba_part");
        v.hostPortPart = row.getFieldAs("host_port_part");
        v.arrayPortPart = row.getFieldAs("array_port_part");
        return v;
    }

    static WaitingPath window(Row row, long windowMs, long arrivedMs) {
        WaitingPath w = new WaitingPath();
        w.host = row.getFieldAs("host");
        w.disk = row.getFieldAs("disk");
        w.direction = row.getFieldAs("direction");
        w.hostUs = row.getFieldAs("host_us");
        w.ios = row.getFieldAs("ios");
        w.windowMs = windowMs;
        w.arrivedMs = arrivedMs;
        return w;
    }

    /** This version of the path on host window `w`: the keys of the parts of `w`'s window it needs. */
    WaitingPath onWindow(WaitingPath w) {
        WaitingPath p = new WaitingPath();
        p.customer = customer;
        p.host = host;
        p.disk = disk;
        p.hostPort = hostPort;
        p.queueDepth = queueDepth;
        p.switchName = switchName;
        p.hostSwitchPort = hostSwitchPort;
        p.arraySwitchPort = arraySwitchPort;
        p.hops = hops;
        p.distanceKm = distanceKm;
        p.array = array;
        p.volume = volume;
        p.validFromMs = validFromMs;
        p.direction = w.direction;
        p.hostUs = w.hostUs;
        p.ios = w.ios;
        p.windowMs = w.windowMs;
        String window = w.windowMs + "|";
        p.arrayPart = window + arrayPart + "|" + w.direction;
        p.hbaPart = window + hbaPart;
        p.hostPortPart = window + hostPortPart;
        p.arrayPortPart = window + arrayPortPart;
        return p;
    }
}

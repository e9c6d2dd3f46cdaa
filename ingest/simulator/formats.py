"""The fleet's state in the shapes the real sources have: Telegraf line protocol for hosts
(win_perf_counters and sqlserver names), 3PAR WSAPI-like documents for arrays, Brocade FOS REST-like
documents for switches, Telegraf's JSON serializer (backfill) and topology records."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ingest.telegraf import pollers

from .fleet import TIERS, VOLUME_MIB, Fleet
from .scenario import Host

DISKS = {"data": "D:", "log": "L:"}


# -- hosts: Telegraf line protocol ---------------------------------------------------------------
def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace(" ", "\\ ").replace(",", "\\,").replace("=", "\\=")


def _value(v) -> str:
    return f"{v}i" if isinstance(v, int) else f"{v:.9g}"


def line(measurement: str, tags: dict, fields: dict, ts_ns: int) -> str:
    tag_text = "".join(f",{_escape(k)}={_escape(str(v))}" for k, v in sorted(tags.items()) if v != "")
    field_text = ",".join(f"{_escape(k)}={_value(v)}" for k, v in fields.items())
    return f"{_escape(measurement)}{tag_text} {field_text} {ts_ns}"


def host_metrics(fleet: Fleet, host: Host) -> list[tuple[str, dict, dict]]:
    """(measurement, tags, fields) as Telegraf's Windows plugins would report them for one interval."""
    fig = fleet.hosts[host.name]
    base = {"host": host.name, "source": host.name, "site": host.site}
    out = []
    io_bytes = fig.mbps * 1024 * 1024 / max(fig.read_iops + fig.write_iops, 1)
    for role, disk in DISKS.items():
        d = fig.disks[role]
        share = (d.read_iops + d.write_iops) / max(fig.read_iops + fig.write_iops, 1)
        out.append(
            (
                "win_disk",
                {**base, "objectname": "LogicalDisk", "instance": disk},
                {
                    "Avg._Disk_sec/Read": fig.disk_us(role, "read") / 1e6,
                    "Avg._Disk_sec/Write": fig.disk_us(role, "write") / 1e6,
                    "Disk_Reads_persec": d.read_iops,
                    "Disk_Writes_persec": d.write_iops,
                    "Disk_Read_Bytes_persec": d.read_iops * io_bytes,
                    "Disk_Write_Bytes_persec": d.write_iops * io_bytes,
                    "Current_Disk_Queue_Length": round(fig.outstanding * share, 3),
                },
            )
        )
    out.append(
        (
            "win_cpu",
            {**base, "objectname": "Processor", "instance": "_Total"},
            {"Percent_Processor_Time": round(fig.cpu_percent, 3)},
        )
    )
    out.append(
        (
            "hba_port",
            {**base, "port": host.host_port},
            {
                "outstanding_ios": round(fig.outstanding, 3),
                "queue_depth": host.queue_depth,
                "frames": fleet.hba_frames[host.host_port],
            },
        )
    )
    sql = fleet.sql[host.name]
    inst = {**base, "sql_instance": f"{host.name}:{host.sql_instance}"}
    for db in host.databases:
        for file, role in ((db, "data"), (f"{db}_log", "log")):
            out.append(
                (
                    "sqlserver_database_io",
                    {
                        **inst,
                        "database_name": db,
                        "logical_filename": file,
                        "file_type": "ROWS" if role == "data" else "LOG",
                        "physical_filename": f"{DISKS[role]}\\MSSQL\\{file}.{'mdf' if role == 'data' else 'ldf'}",
                        "volume_mount_point": DISKS[role],
                    },
                    {
                        k: int(sql[(file, k)])
                        for k in ("reads", "writes", "read_bytes", "write_bytes", "read_latency_ms", "write_latency_ms")
                    },
                )
            )
        out.append(
            (
                "sqlserver_performance",
                {
                    **inst,
                    "object": "SQLServer:Databases",
                    "counter": "Transactions/sec",
                    "instance": db,
                    "counter_type": "272696576",
                },
                {"value": int(sql[(db, "Transactions/sec")])},
            )
        )
    out.append(
        (
            "sqlserver_performance",
            {
                **inst,
                "object": "SQLServer:SQL Statistics",
                "counter": "Batch Requests/sec",
                "counter_type": "272696576",
            },
            {"value": int(sql[("", "Batch Requests/sec")])},
        )
    )
    for wait in ("PAGEIOLATCH_SH", "WRITELOG"):
        out.append(
            (
                "sqlserver_waitstats",
                {**inst, "wait_type": wait, "wait_category": "Buffer IO" if wait[0] == "P" else "Tran Log IO"},
                {
                    "wait_time_ms": int(sql[("", wait)]),
                    "waiting_tasks_count": int(sql[("", wait)] // 3),
                    "signal_wait_time_ms": 0,
                },
            )
        )
    return out


# -- arrays: 3PAR WSAPI-like ------------------------------------------------------------------------
def _envelope(fleet: Fleet, members: list[dict]) -> dict:
    t = fleet.t
    return {
        "sampleTime": datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00"),
        "sampleTimeSec": int(t),
        "total": len(members),
        "members": members,
    }


def vlun_statistics(fleet: Fleet, array: str) -> dict:
    """/api/v1/systemreporter/attime/vlunstatistics/hires, grouped by volumeName, hostname, hostWWN."""
    dt, members = fleet.s.interval_s, []
    for v in fleet.s.arrays[array].volumes:
        f, host = fleet.volumes[v.name], fleet.s.hosts[v.host]
        r, w = f.reads / dt, f.writes / dt
        members.append(
            {
                "volumeName": v.name,
                "hostname": v.host,
                "hostWWN": host.host_port,
                "IO": {"read": round(r, 2), "write": round(w, 2), "total": round(r + w, 2)},
                "KBytes": {
                    "read": round(f.read_kb / dt, 2),
                    "write": round(f.write_kb / dt, 2),
                    "total": round((f.read_kb + f.write_kb) / dt, 2),
                },
                "serviceTimeMS": {
                    "read": round(f.read_ms, 4),
                    "write": round(f.write_ms, 4),
                    "total": round((f.read_ms * r + f.write_ms * w) / max(r + w, 1e-9), 4),
                },
                "IOSizeKB": {
                    "read": round(f.read_kb / max(f.reads, 1), 2),
                    "write": round(f.write_kb / max(f.writes, 1), 2),
                    "total": round((f.read_kb + f.write_kb) / max(f.reads + f.writes, 1), 2),
                },
                "queueLength": round((r * f.read_ms + w * f.write_ms) / 1000, 3),
                "busyPct": round(min(100.0, (r + w) / 1000), 2),
            }
        )
    return _envelope(fleet, members)


def vv_histograms(fleet: Fleet, array: str) -> dict:
    """Per-volume cumulative service-time histograms (System Reporter's rhist0..31 / whist0..31)."""
    members = []
    for v in fleet.s.arrays[array].volumes:
        f = fleet.volumes[v.name]
        member = {"volumeName": v.name}
        member.update({f"rhist{n}": int(c) for n, c in enumerate(f.rhist)})
        member.update({f"whist{n}": int(c) for n, c in enumerate(f.whist)})
        members.append(member)
    return _envelope(fleet, members)


def vv_tiers(fleet: Fleet, array: str) -> dict:
    """Hybrid arrays: per-volume tier usage, cumulative page moves (adaptive optimisation) and each tier's part of
    the volume's I/O: IOPS and service time per direction, interval averages like vlunstatistics'."""
    dt, members = fleet.s.interval_s, []
    for v in fleet.s.arrays[array].volumes:
        f = fleet.volumes[v.name]
        tier0 = round(VOLUME_MIB * v.tier0_share)
        member = {
            "volumeName": v.name,
            "tier0MiB": tier0,
            "tier1MiB": VOLUME_MIB - tier0,
            "pageMovesUp": f.page_moves_up,
            "pageMovesDown": f.page_moves_down,
        }
        for tier in TIERS:
            ios = {d: f.tier_ios.get((tier, d), 0) for d in ("read", "write")}
            member[f"tier{tier}IO"] = {d: round(n / dt, 2) for d, n in ios.items()}
            member[f"tier{tier}ServiceTimeMS"] = {
                d: round(f.tier_ms.get((tier, d), 0.0), 4) if n else 0.0 for d, n in ios.items()
            }
        members.append(member)
    return _envelope(fleet, members)


# 3PAR's /api/v1/capacity names its device types; a hybrid array's Tier 0 is its SSDs, Tier 1 its SAS disks ("FC")
TIER_DEVICE_TYPES = {0: "SSDCapacity", 1: "FCCapacity"}


def capacity(fleet: Fleet, array: str) -> dict:
    """/api/v1/capacity: per device type (tier) the array's capacity and what is free of it. The real document has
    no sample time: the simulator adds sampleTimeSec, as it adds the switches' sample-time."""
    a = fleet.s.arrays[array]
    tier0_total = round(a.tier0_capacity_gib * 1024)
    tier1_total = VOLUME_MIB * len(a.volumes)  # room for every volume whole
    used = {0: fleet.tier0_used_mib[array], 1: sum(VOLUME_MIB - round(VOLUME_MIB * v.tier0_share) for v in a.volumes)}
    totals = {0: tier0_total, 1: tier1_total}
    document = {"sampleTimeSec": int(fleet.t)}
    for tier, device_type in TIER_DEVICE_TYPES.items():
        document[device_type] = {"totalMiB": totals[tier], "freeMiB": max(totals[tier] - used[tier], 0)}
    return document


RENDERERS = {
    "array_vlun": vlun_statistics,
    "array_vv_histogram": vv_histograms,
    "array_vv_tier": vv_tiers,
    "array_capacity": capacity,
}


def array_document(fleet: Fleet, array: str, path: str) -> dict | None:
    """The document an array serves at `path` under its base URL, or None."""
    if path not in pollers.ARRAY_APIS or (path in pollers.HYBRID_ONLY and fleet.s.arrays[array].media != "hybrid"):
        return None
    return RENDERERS[pollers.ARRAY_APIS[path][0]](fleet, array)


# -- switches: Brocade FOS REST-like ---------------------------------------------------------------
PORT_COUNTERS = [
    "bb-credit-zero",
    "class3-in-discards",
    "class3-out-discards",
    "in-crc-errors",
    "frames-timed-out",
    "in-frames",
    "out-frames",
    "in-words",
    "out-words",
]


def fc_statistics(fleet: Fleet, switch: str) -> dict:
    """brocade-interface/fibrechannel-statistics. FOS has no sample time in this document; the simulator
    adds "sample-time" (its own clock) so that accelerated runs keep rates right."""
    used = sorted(p for (s, p) in fleet.ports if s == switch)
    stats = [{"name": f"0/{p}", **{k: int(fleet.ports[(switch, p)][k]) for k in PORT_COUNTERS}} for p in used]
    return {"Response": {"fibrechannel-statistics": stats}, "sample-time": int(fleet.t)}


# -- backfill: what Telegraf would have produced -------------------------------------------------
def telegraf_json(measurement: str, tags: dict, fields: dict, ts_ms: int) -> bytes:
    return json.dumps(
        {"fields": fields, "name": measurement, "tags": tags, "timestamp": ts_ms}, separators=(",", ":")
    ).encode()


def flatten(member: dict, tag_keys: list[str]) -> tuple[dict, dict]:
    """json_v2's object mode: nested keys joined with "_", the listed keys as tags."""
    tags, fields = {}, {}
    for key, value in member.items():
        if key in tag_keys:
            tags[key] = str(value)
        elif isinstance(value, dict):
            fields.update({f"{key}_{k}": v for k, v in value.items()})
        else:
            fields[key] = value
    return tags, fields


def polled_metrics(fleet: Fleet) -> list[tuple[str, dict, dict]]:
    """The array and switch documents as Telegraf's inputs.http + json_v2 turns them into metrics."""
    out = []
    for array in fleet.s.arrays.values():
        base = {"array": array.name, "site": array.site, "source": array.name}
        for path, (measurement, tag_keys) in pollers.ARRAY_APIS.items():
            document = array_document(fleet, array.name, path)
            for member in pollers.metric_objects(path, document) if document else []:
                tags, fields = flatten(member, tag_keys)
                out.append((measurement, {**base, **tags}, fields))
    for switch in fleet.s.switches.values():
        base = {"switch": switch.name, "site": switch.site, "source": switch.name}
        for port in fc_statistics(fleet, switch.name)["Response"]["fibrechannel-statistics"]:
            tags, fields = flatten(port, ["name"])
            out.append((pollers.SWITCH_MEASUREMENT, {**base, **tags}, fields))
    return out


# -- topology: inventory.topology (compacted, keyed by entity) -------------------------------------
def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


def array_record(fleet: Fleet, name: str, valid_from: float) -> tuple[str, dict]:
    """An array's inventory entry; published again, with its new valid_from, when its firmware changes."""
    a = fleet.s.arrays[name]
    return f"array/{a.name}", {
        "kind": "array",
        "valid_from": _iso(valid_from),
        "array": a.name,
        "customer": a.customer,
        "site": a.site,
        "model": a.model,
        "media": a.media,
        "firmware": fleet.firmware[a.name],
        "volumes": [v.name for v in a.volumes],
    }


def topology(fleet: Fleet) -> list[tuple[str, dict]]:
    s, since = fleet.s, _iso(fleet.start_s)
    out = [array_record(fleet, a, fleet.start_s) for a in s.arrays]
    for sw in s.switches.values():
        out.append(
            (
                f"switch/{sw.name}",
                {
                    "kind": "switch",
                    "valid_from": since,
                    "switch": sw.name,
                    "customer": next((h.customer for h in s.hosts.values() if h.switch == sw.name), ""),
                    "site": sw.site,
                    "ports": sw.ports,
                },
            )
        )
    for h in s.hosts.values():
        for role, disk in DISKS.items():
            out.append(
                (
                    f"path/{h.name}/{disk}",
                    {
                        "kind": "path",
                        "valid_from": since,
                        "customer": h.customer,
                        "site": h.site,
                        "host": h.name,
                        "disk": disk,
                        "sql_instance": f"{h.name}:{h.sql_instance}",
                        "databases": h.databases,
                        "host_port": h.host_port,
                        "queue_depth": h.queue_depth,
                        "transport": h.transport,
                        "multipath_policy": h.multipath_policy,
                        "switch": h.switch,
                        "host_switch_port": f"0/{h.switch_port}",
                        "array_switch_port": f"0/{h.array_port}",
                        "hops": h.hops,
                        "distance_km": h.distance_km,
                        "array": h.array,
                        "volume": f"{h.name}_{role}",
                    },
                )
            )
    return out

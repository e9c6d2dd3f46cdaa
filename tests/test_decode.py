"""The normalise job's decoding step, isolated (pure logic): catalog, canonical units, refusals."""
from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "flink-jobs"))
from normalize.decode import DEAD, DROPPED, ROW_FIELDS, SAMPLE, decode, load_catalog  # noqa: E402

CATALOG = load_catalog()
NOW = 1_795_000_000_000


def rows(record, arrival=NOW):
    payload = record if isinstance(record, str) else json.dumps(record)
    return [dict(zip(ROW_FIELDS, r)) for r in decode(payload, arrival, CATALOG)]


def win_disk(**fields):
    return {"name": "win_disk", "timestamp": NOW, "tags": {"host": "h", "instance": "E:", "site": "s"},
            "fields": fields}


def test_perfmon_seconds_become_microseconds_and_entities_come_from_tags():
    out = rows(win_disk(**{"Avg._Disk_sec/Read": 0.012, "Disk_Reads_persec": 250}))
    assert [(r["metric"], r["num"], r["unit"], r["kind"]) for r in out] == [
        ("disk.read_latency", 12000.0, "us", "gauge"), ("disk.reads", 250.0, "1/s", "gauge")]
    assert out[0]["first"] and not out[1]["first"]
    assert (out[0]["host"], out[0]["disk"], out[0]["site"]) == ("h", "E:", "s")


def test_dmv_stall_is_paired_with_its_count_for_the_ratio():
    out = rows({"name": "sqlserver_database_io", "timestamp": NOW,
                "tags": {"sql_instance": "h:MSSQL", "database_name": "db", "logical_filename": "db_data"},
                "fields": {"reads": 100, "read_latency_ms": 1200}})
    ratio = next(r for r in out if r["metric"] == "file.read_latency")
    assert (ratio["kind"], ratio["num"], ratio["den"], ratio["unit"]) == ("ratio", 1_200_000.0, 100.0, "us")
    assert (ratio["database"], ratio["file"]) == ("db", "db_data")


def test_histogram_buckets_keep_their_index():
    fields = {f"whist{n}": n for n in range(32)}
    out = rows({"name": "array_vv_histogram", "timestamp": NOW, "tags": {"array": "a", "volumeName": "v"},
                "fields": fields})
    assert sorted(r["bucket"] for r in out) == list(range(32))
    assert {r["metric"] for r in out} == {"volume.write_service_time_hist"}


def test_counters_selected_by_a_tag_and_unknown_fields_are_dropped_not_lost():
    out = rows({"name": "sqlserver_performance", "timestamp": NOW,
                "tags": {"counter": "Batch Requests/sec", "object": "SQLServer:SQL Statistics"},
                "fields": {"value": 10, "extra": 1}})
    assert [(r["outcome"], r["metric"] or r["reason"]) for r in out] == [
        (SAMPLE, "sql.batch_requests"), (DROPPED, "field not in catalog")]
    other = rows({"name": "sqlserver_performance", "timestamp": NOW, "tags": {"counter": "Logins/sec"},
                  "fields": {"value": 10}})
    assert [(r["outcome"], r["reason"]) for r in other] == [(DROPPED, "field not in catalog")]
    assert other[0]["first"]


BAD = {
    "not JSON": "garbage{",
    "not a JSON object": "[1, 2]",
    "empty message": "",
    "missing field": {"name": "win_disk", "timestamp": NOW, "tags": {}},
    "unknown measurement": {"name": "nope", "timestamp": NOW, "tags": {}, "fields": {"a": 1}},
    "bad timestamp": {"name": "win_disk", "timestamp": "yesterday", "tags": {}, "fields": {"Disk_Reads_persec": 1}},
    "timestamp in the future": {**win_disk(Disk_Reads_persec=1), "timestamp": NOW + 3_600_000},
    "timestamp too old": {**win_disk(Disk_Reads_persec=1), "timestamp": NOW - 40 * 86_400_000},
    "non-numeric value": win_disk(Disk_Reads_persec="many"),
    "non-finite value": '{"name":"win_disk","timestamp":%d,"tags":{},"fields":{"Disk_Reads_persec":Infinity}}' % NOW,
    "negative value": win_disk(Disk_Reads_persec=-5),
    "beyond physical bounds": win_disk(**{"Avg._Disk_sec/Read": 120.0}),
}


@pytest.mark.parametrize("reason", BAD)
def test_each_kind_of_bad_record_is_refused_whole_with_its_own_reason(reason):
    out = rows(BAD[reason])
    assert len(out) == 1 and out[0]["outcome"] == DEAD and out[0]["first"]
    assert out[0]["reason"] == reason


def test_nan_is_refused_like_infinity():
    out = rows('{"name":"win_disk","timestamp":%d,"tags":{},"fields":{"Disk_Reads_persec":NaN}}' % NOW)
    assert (out[0]["reason"], out[0]["detail"]) == ("non-finite value", "Disk_Reads_persec = nan")

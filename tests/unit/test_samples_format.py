"""The jobs that read telemetry.samples decode only the metrics they name (the format `sanlens-samples`,
flink-jobs/common/java/): a metric their SQL filters on but the list leaves out would never reach them (from
Flink's own planner, no stack needed). The format reads a record's message as a row per sample (its decoder,
pure logic through py4j)."""

from __future__ import annotations

import importlib
import json
import re

import pytest

from flink_jobs.normalize import catalog
from flink_jobs.normalize.catalog import ENTITY_KEYS
from tests.support import java_functions, job_plan

CATALOG_METRICS = {f["metric"] for m in catalog.load()["measurements"].values() for f in m["fields"].values()}


@pytest.mark.parametrize("name", ["histograms", "breakdown", "tiering"])
def test_every_metric_a_job_filters_on_is_one_it_decodes(monkeypatch, name):
    tables = importlib.import_module(f"flink_jobs.{name}.tables")
    plan = job_plan(monkeypatch, name)
    named = set(re.findall(r"'([a-z0-9_]+\.[a-z0-9_]+)'", plan)) & CATALOG_METRICS
    assert named, f"{name}: no catalog metric in the plan"
    assert named <= set(tables.METRICS), (
        f"{name} filters on {sorted(named - set(tables.METRICS))} but never decodes them"
    )


MESSAGE = {
    "ts": "2026-11-18T11:06:40.5Z",
    "site": "s1",
    "array": "af1",
    "volume": 'v"1 é',
    "arrived_at": "2026-11-18T11:06:41Z",
    "samples": [
        {"metric": "volume.reads", "value": 12.5, "unit": "1/s", "bucket": -1},
        {"metric": "volume.write_service_time_hist", "value": 7, "unit": "ios", "bucket": 4},
        {"metric": "volume.read_service_time_hist", "value": 3.0, "unit": "ios", "bucket": 5, "site": "own"},
    ],
}


@pytest.fixture(scope="module")
def decode():
    """The format's decoder (pure logic through py4j) for the columns `columns` of (name, type root)."""
    from py4j.java_collections import ListConverter, MapConverter, SetConverter
    from pyflink.java_gateway import get_gateway

    sanlens, gw = java_functions(), get_gateway()
    roots = gw.jvm.org.apache.flink.table.types.logical.LogicalTypeRoot

    def value(field):
        if field is None or isinstance(field, (int, float)):
            return field
        if field.getClass().getSimpleName() == "GenericArrayData":
            return list(field.toObjectArray())
        return str(field.toString())

    def run(columns: list[tuple[str, str]], metrics: set[str], message: bytes, pairs=None, gather=()) -> list[list]:
        names = ListConverter().convert([n for n, _ in columns], gw._gateway_client)
        types = ListConverter().convert([getattr(roots, t) for _, t in columns], gw._gateway_client)
        wanted = SetConverter().convert(metrics, gw._gateway_client)
        partners = MapConverter().convert(pairs or {}, gw._gateway_client)
        gathered = SetConverter().convert(set(gather), gw._gateway_client)
        decoder = sanlens.common.SamplesDecoder(names, types, wanted, partners, gathered, None)
        rows = gw.jvm.java.util.ArrayList()
        decoder.deserialize(message, gw.jvm.org.apache.flink.api.common.functions.util.ListCollector(rows))
        return [[value(row.getField(i)) for i in range(len(columns))] for row in rows]

    return run


COLUMNS = [
    ("ts", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"),
    ("metric", "VARCHAR"),
    ("value", "DOUBLE"),
    ("bucket", "INTEGER"),
    ("site", "VARCHAR"),
    ("volume", "VARCHAR"),
    ("host", "VARCHAR"),
]


def test_a_record_s_message_is_a_row_per_wanted_sample_its_own_fields_first_then_the_message_s(decode):
    wanted = {"volume.write_service_time_hist", "volume.read_service_time_hist"}
    rows = decode(COLUMNS, wanted, json.dumps(MESSAGE).encode())
    assert rows == [
        ["2026-11-18T11:06:40.500", "volume.write_service_time_hist", 7.0, 4, "s1", 'v"1 é', None],
        ["2026-11-18T11:06:40.500", "volume.read_service_time_hist", 3.0, 5, "own", 'v"1 é', None],
    ]


def test_a_sample_carries_its_partner_s_value_from_the_same_record(decode):
    """A host disk's latency and its rate meet where the message is read (histograms, breakdown): `paired`."""
    columns = [*COLUMNS, ("paired", "DOUBLE")]
    record = {
        **MESSAGE,
        "samples": [
            {"metric": "disk.read_latency", "value": 250.0},
            {"metric": "disk.write_latency", "value": 900.0},
            {"metric": "disk.reads", "value": 40.0},
        ],
    }
    pairs = {"disk.read_latency": "disk.reads", "disk.write_latency": "disk.writes"}
    rows = decode(columns, set(pairs), json.dumps(record).encode(), pairs)
    assert [(r[1], r[2], r[-1]) for r in rows] == [
        ("disk.read_latency", 250.0, 40.0),
        ("disk.write_latency", 900.0, None),  # no write rate in this record
    ]
    assert decode(columns, {"disk.reads"}, json.dumps(record).encode(), pairs)[0][-1] is None  # not paired itself


def test_a_record_s_histogram_is_one_row_per_metric_its_buckets_and_counts_in_arrays(decode):
    """`gather`: a volume's interval histogram travels as one row (histograms, burn_rates), not one per bucket."""
    columns = [*COLUMNS, ("buckets", "ARRAY"), ("counts", "ARRAY")]
    record = {
        **MESSAGE,
        "samples": [
            {"metric": "volume.write_service_time_hist", "value": 7, "bucket": 4},
            {"metric": "volume.reads", "value": 12.5, "bucket": -1},
            {"metric": "volume.read_service_time_hist", "value": 3.0, "bucket": 5},
            {"metric": "volume.write_service_time_hist", "value": 1874.0, "bucket": 6},
        ],
    }
    hists = {"volume.write_service_time_hist", "volume.read_service_time_hist"}
    rows = decode(columns, hists | {"volume.reads"}, json.dumps(record).encode(), gather=hists)
    assert [(r[1], r[-2], r[-1]) for r in rows] == [
        ("volume.write_service_time_hist", [4, 6], [7, 1874]),
        ("volume.reads", None, None),
        ("volume.read_service_time_hist", [5], [3]),
    ]
    with pytest.raises(Exception, match="needs a bucket and a value"):
        decode(columns, hists, b'{"samples":[{"metric":"volume.read_service_time_hist","value":1}]}', gather=hists)


def test_a_message_without_a_wanted_metric_is_skipped_unread(decode):
    assert decode(COLUMNS, {"disk.reads"}, json.dumps(MESSAGE).encode()) == []
    assert decode(COLUMNS, {"disk.reads"}, b'{"samples":[{"metric":"volume.reads",,,') == []


def test_a_message_that_is_not_the_contract_s_fails_naming_the_topic(decode):
    from py4j.protocol import Py4JJavaError

    with pytest.raises(Py4JJavaError, match="telemetry.samples"):
        decode(COLUMNS, {"volume.reads"}, b'{"samples":[{"metric":"volume.reads",,,')
    with pytest.raises(Py4JJavaError, match="telemetry.samples"):
        decode(COLUMNS, {"volume.reads"}, b'{"samples":{"metric":"volume.reads"}}')
    with pytest.raises(Py4JJavaError, match="site is not a single value"):
        decode(COLUMNS, {"volume.reads"}, b'{"site":{"a":1},"samples":[{"metric":"volume.reads","value":1}]}')


def test_what_sample_json_writes_reads_back(decode):
    """The writer (normalize's SampleJson) and this reader agree, whatever the tags hold."""
    from py4j.java_collections import ListConverter
    from pyflink.java_gateway import get_gateway

    gw, sanlens = get_gateway(), java_functions()
    entity = ["s é", "", "", "", "", "", "af1", 'q"uote\\back\n😀', "", "", ""]
    array = gw.new_array(gw.jvm.java.lang.String, len(entity))
    for i, e in enumerate(entity):
        array[i] = e
    keys = ListConverter().convert(ENTITY_KEYS, gw._gateway_client)
    message = sanlens.normalize.SampleJson(keys, 1_795_000_000_123, array, 1_795_000_001_000)
    message.add("volume.reads", 1e-5, "1/s", -1).add("volume.writes", 2.0, "1/s", -1)
    rows = decode(COLUMNS, {"volume.writes", "volume.reads"}, bytes(message.bytes()))
    assert rows == [
        ["2026-11-18T11:06:40.123", "volume.reads", 1e-5, -1, "s é", 'q"uote\\back\n😀', ""],
        ["2026-11-18T11:06:40.123", "volume.writes", 2.0, -1, "s é", 'q"uote\\back\n😀', ""],
    ]

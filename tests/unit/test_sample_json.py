"""The samples' messages as the normalize job writes them (SampleJson, pure logic through py4j), one per record:
byte for byte what Flink's own JSON format writes for the contract's row (docs/contract.md, telemetry.samples),
whatever the tags hold."""

from __future__ import annotations

import json

import pytest
from py4j.java_collections import ListConverter

from flink_jobs.normalize.catalog import ENTITY_KEYS
from tests.support import java_functions

SAMPLES_ROW = (
    "ROW<ts TIMESTAMP_LTZ(3), "
    + ", ".join(f"`{key}` STRING" for key in ENTITY_KEYS)
    + ", arrived_at TIMESTAMP_LTZ(3), samples ARRAY<ROW<metric STRING, `value` DOUBLE, unit STRING, bucket INT>>>"
)
T = 1_795_000_000_000
PLAIN = ["acme-east", "sql01", "D:", "sql01:MSSQLSERVER", "tpce", "tpce", "", "", "", "", ""]
TRICKY = [
    'q"uote\\back',
    "line\nfeed\ttab\u0001\u007f",
    "é ü 東京",
    "emoji 😀",
    "</script>",
    "",
    "",
    "",
    "",
    "",
    "x" * 300,
]


@pytest.fixture(scope="module")
def gateway():
    sanlens = java_functions()
    from pyflink.java_gateway import get_gateway

    return get_gateway(), sanlens


@pytest.fixture(scope="module")
def flink_json(gateway):
    """Flink's JSON format for the contract's row (ISO-8601 timestamps)."""
    jvm = gateway[0].jvm
    flink, data = jvm.org.apache.flink, jvm.org.apache.flink.table.data
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    row_type = flink.table.types.logical.utils.LogicalTypeParser.parse(SAMPLES_ROW, loader)
    null_keys = getattr(flink.formats.json, "JsonFormatOptions$MapNullKeyMode").FAIL
    schema = flink.formats.json.JsonRowDataSerializationSchema(
        row_type, flink.formats.common.TimestampFormat.ISO_8601, null_keys, "null", False, False
    )
    schema.open(None)

    def row(fields):
        r = data.GenericRowData(len(fields))
        for i, field in enumerate(fields):
            r.setField(i, field)
        return r

    def write(ts_ms, entity, arrival_ms, samples):
        text = data.StringData.fromString
        rows = gateway[0].new_array(jvm.java.lang.Object, len(samples))
        for i, (metric, value, unit, bucket) in enumerate(samples):
            rows[i] = row([text(metric), value, text(unit), bucket])
        fields = [data.TimestampData.fromEpochMillis(ts_ms), *[text(e) for e in entity]]
        fields += [data.TimestampData.fromEpochMillis(arrival_ms), data.GenericArrayData(rows)]
        return bytes(schema.serialize(row(fields)))

    return write


@pytest.fixture(scope="module")
def sample_json(gateway):
    gw, sanlens = gateway
    keys = ListConverter().convert(ENTITY_KEYS, gw._gateway_client)

    def write(ts_ms, entity, arrival_ms, samples, times=None):
        """`times`: a writer's cache of formatted seconds (SampleJson.Times) kept from the record before."""
        array = gw.new_array(gw.jvm.java.lang.String, len(entity))
        for i, e in enumerate(entity):
            array[i] = e
        if times is None:
            message = sanlens.normalize.SampleJson(keys, ts_ms, array, arrival_ms)
        else:
            message = sanlens.normalize.SampleJson(keys, times, ts_ms, array, arrival_ms)
        for metric, value, unit, bucket in samples:
            message.add(metric, value, unit, bucket)
        assert message.size() == len(samples)
        return bytes(message.bytes())

    return write


@pytest.mark.parametrize(
    "ts_ms, entity, arrival_ms, samples",
    [
        (T, PLAIN, T + 1_002, [("file.read_latency", 400.0, "us", -1)]),
        (T + 500, PLAIN, T + 683, [("volume.write_service_time_hist", 1874.0, "ios", b) for b in (0, 7, 31)]),
        (T + 10, TRICKY, T + 999, [("port.tx_credit_zero", 1e-5, "us/s", -1), ('q"m\\é😀', 2.0, "x\ny", 1)]),
        (T - 1, TRICKY, T, [("sql.batch_requests", 123456789.125, "1/s", -1)]),
        (0, PLAIN, 1, [("volume.reads", 1.5e21, "1/s", 0), ("volume.writes", 0.0, "1/s", -1)]),
        (
            T + 120,
            PLAIN,
            T + 50,
            [("volume.reads", v, "1/s", -1) for v in (-0.0, -1.0, 9_999_999.0, 1e7, -9_999_999.0, -1e7, 2.0**53, 0.5)],
        ),
    ],
)
def test_a_record_s_samples_are_written_as_flinks_json_format_writes_them(
    flink_json, sample_json, ts_ms, entity, arrival_ms, samples
):
    ours = sample_json(ts_ms, entity, arrival_ms, samples)
    assert ours == flink_json(ts_ms, entity, arrival_ms, samples)
    parsed = json.loads(ours)
    assert list(parsed) == ["ts", *ENTITY_KEYS, "arrived_at", "samples"]
    assert [parsed[k] for k in ENTITY_KEYS] == entity
    assert [tuple(s.values()) for s in parsed["samples"]] == samples


def test_times_are_utc_iso_8601_with_their_milliseconds_if_any(sample_json):
    first = json.loads(sample_json(T, PLAIN, T + 5, [("volume.reads", 1.0, "1/s", -1)]))
    assert first["ts"] == "2026-11-18T11:06:40Z" and first["arrived_at"] == "2026-11-18T11:06:40.005Z"


def test_times_written_one_record_after_another_are_each_their_own(gateway, sample_json, flink_json):
    """The writer keeps the text of the second it formatted last, and writes the milliseconds itself."""
    times = getattr(gateway[1].normalize, "SampleJson$Times")()
    sample = ("volume.reads", 1.0, "1/s", -1)
    for offset in (0, 1, 10, 100, 999, 1_000, 1_005, 1_050, 1_500, 1_120, 61_001, -1, -1_000, -999, 3_600_000):
        ts, arrival = T + offset, T + 2 * offset + 7
        assert sample_json(ts, PLAIN, arrival, [sample], times) == flink_json(ts, PLAIN, arrival, [sample]), offset

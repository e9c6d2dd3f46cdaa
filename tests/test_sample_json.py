"""The samples' messages as the normalize job writes them (SampleJson, pure logic through py4j): byte for byte
what Flink's own JSON format writes for the contract's row (docs/contract.md, telemetry.samples), as the job's
sink table had it, whatever the tags hold."""

from __future__ import annotations

import json

import pytest
from py4j.java_collections import ListConverter

from flink_jobs.normalize.catalog import ENTITY_KEYS
from tests.support import java_functions

SAMPLES_ROW = (
    "ROW<ts TIMESTAMP_LTZ(3), metric STRING, `value` DOUBLE, unit STRING, bucket INT, "
    + ", ".join(f"`{key}` STRING" for key in ENTITY_KEYS)
    + ", arrived_at TIMESTAMP_LTZ(3)>"
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
    """Flink's JSON format as the samples' sink table had it (ISO-8601 timestamps)."""
    jvm = gateway[0].jvm
    flink, data = jvm.org.apache.flink, jvm.org.apache.flink.table.data
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    row_type = flink.table.types.logical.utils.LogicalTypeParser.parse(SAMPLES_ROW, loader)
    null_keys = getattr(flink.formats.json, "JsonFormatOptions$MapNullKeyMode").FAIL
    schema = flink.formats.json.JsonRowDataSerializationSchema(
        row_type, flink.formats.common.TimestampFormat.ISO_8601, null_keys, "null", False, False
    )
    schema.open(None)

    def write(ts_ms, metric, value, unit, bucket, entity, arrival_ms):
        text = data.StringData.fromString
        fields = [data.TimestampData.fromEpochMillis(ts_ms), text(metric), value, text(unit), bucket]
        fields += [text(e) for e in entity] + [data.TimestampData.fromEpochMillis(arrival_ms)]
        row = data.GenericRowData(len(fields))
        for i, field in enumerate(fields):
            row.setField(i, field)
        return bytes(schema.serialize(row))

    return write


@pytest.fixture(scope="module")
def sample_json(gateway):
    gw, sanlens = gateway
    keys = ListConverter().convert(ENTITY_KEYS, gw._gateway_client)

    def write(ts_ms, metric, value, unit, bucket, entity, arrival_ms):
        array = gw.new_array(gw.jvm.java.lang.String, len(entity))
        for i, e in enumerate(entity):
            array[i] = e
        return bytes(sanlens.normalize.SampleJson(keys, ts_ms, array, arrival_ms).sample(metric, value, unit, bucket))

    return write


@pytest.mark.parametrize(
    "ts_ms, metric, value, unit, bucket, entity, arrival_ms",
    [
        (T, "file.read_latency", 400.0, "us", -1, PLAIN, T + 1_002),
        (T + 500, "volume.write_service_time_hist", 1874.0, "ios", 31, PLAIN, T + 683),
        (T + 10, "port.tx_credit_zero", 1e-5, "us/s", -1, TRICKY, T + 999),
        (T - 1, "sql.batch_requests", 123456789.125, "1/s", -1, TRICKY, T),
        (0, "volume.reads", 1.5e21, "1/s", 0, PLAIN, 1),
        (T, "volume.reads", 0.0, "1/s", -1, PLAIN, T),
    ],
)
def test_a_sample_is_written_as_flinks_json_format_wrote_it(
    flink_json, sample_json, ts_ms, metric, value, unit, bucket, entity, arrival_ms
):
    ours = sample_json(ts_ms, metric, value, unit, bucket, entity, arrival_ms)
    assert ours == flink_json(ts_ms, metric, value, unit, bucket, entity, arrival_ms)
    parsed = json.loads(ours)
    assert list(parsed) == ["ts", "metric", "value", "unit", "bucket", *ENTITY_KEYS, "arrived_at"]
    assert [parsed[k] for k in ENTITY_KEYS] == entity and parsed["value"] == value


def test_times_are_utc_iso_8601_with_their_milliseconds_if_any(sample_json):
    first = json.loads(sample_json(T, "volume.reads", 1.0, "1/s", -1, PLAIN, T + 5))
    assert first["ts"] == "2026-11-18T11:06:40Z" and first["arrived_at"] == "2026-11-18T11:06:40.005Z"

"""The loader's columnar path (pure logic): a batch of the jobs' JSON messages as an Arrow table of the
target table's columns, or a refusal that sends the batch the JSONEachRow way."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from ingest.loader import arrow

COLUMNS = [
    ("ts", "DateTime64(3, 'UTC')"),
    ("metric", "LowCardinality(String)"),
    ("value", "Float64"),
    ("bucket", "Int16"),
    ("site", "LowCardinality(String)"),
    ("kafka_partition", "UInt16"),
    ("kafka_offset", "UInt64"),
]


def test_a_flink_sample_message_becomes_a_row_missing_fields_null_unknown_ones_ignored():
    line = b'{"ts":"2026-11-24T10:00:00.123Z","metric":"disk.reads","value":250,"bucket":-1,"x":1,'
    line += b'"kafka_partition":2,"kafka_offset":7}'
    rows = arrow.Target(COLUMNS).table([line]).to_pylist()
    assert rows == [
        {
            "ts": datetime(2026, 11, 24, 10, 0, 0, 123000, tzinfo=UTC),
            "metric": "disk.reads",
            "value": 250.0,
            "bucket": -1,
            "site": None,
            "kafka_partition": 2,
            "kafka_offset": 7,
        }
    ]


def test_a_line_that_does_not_fit_refuses_the_batch():
    with pytest.raises(pa.ArrowInvalid):
        arrow.Target(COLUMNS).table([b'{"ts":"yesterday","metric":"m"}'])


def test_a_column_of_a_type_it_does_not_map_is_left_out_unless_a_message_sets_it():
    target = arrow.Target([*COLUMNS, ("tags", "Map(LowCardinality(String), String)")])
    assert "tags" not in target.schema.names
    assert target.table([b'{"metric":"m"}']).num_rows == 1
    with pytest.raises(pa.ArrowInvalid):
        target.table([b'{"metric":"m","tags":{"a":"b"}}'])


def test_a_record_s_samples_become_a_row_each_its_own_columns_first_then_the_message_s():
    """telemetry.samples: a message per record, the columns its samples share, each sample's own in a list."""
    target = arrow.Target(COLUMNS, rows="samples")
    lines = [
        b'{"ts":"2026-11-24T10:00:00Z","site":"s1","samples":[{"metric":"a","value":1,"bucket":-1,"x":1},'
        b'{"metric":"b","value":2.5,"bucket":3,"site":"own"}],"kafka_partition":1,"kafka_offset":4}',
        b'{"ts":"2026-11-24T10:00:10Z","site":"s2","samples":[],"kafka_partition":1,"kafka_offset":5}',
        b'{"ts":"2026-11-24T10:00:20Z","site":"s3","samples":[{"metric":"c","value":0}],"kafka_partition":0,'
        b'"kafka_offset":9}',
    ]
    rows = target.table(lines).to_pylist()
    assert [
        (r["metric"], r["value"], r["bucket"], r["site"], r["kafka_partition"], r["kafka_offset"]) for r in rows
    ] == [
        ("a", 1.0, -1, "s1", 1, 4),
        ("b", 2.5, 3, "own", 1, 4),
        ("c", 0.0, None, "s3", 0, 9),
    ]
    assert rows[2]["ts"] == datetime(2026, 11, 24, 10, 0, 20, tzinfo=UTC)
    # the JSONEachRow path's unnesting gives the same rows
    flat = [json.loads(row) for line in lines for row in arrow.unnest(line, "samples")]
    assert [(r["metric"], r.get("bucket"), r["site"], r["kafka_offset"]) for r in flat] == [
        (r["metric"], r["bucket"], r["site"], r["kafka_offset"]) for r in rows
    ]


def test_a_message_not_of_the_nested_shape_is_left_whole_for_clickhouse_to_refuse():
    assert arrow.unnest(b'{"samples": 3}', "samples") == [b'{"samples": 3}']
    assert arrow.unnest(b"not json", "samples") == [b"not json"]

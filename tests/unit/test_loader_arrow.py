"""The loader's columnar path (pure logic): a batch of the jobs' JSON messages as an Arrow table of the
target table's columns, or a refusal that sends the batch the JSONEachRow way."""

from __future__ import annotations

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


def test_a_flink_sample_message_becomes_a_row_missing_fields_null():
    line = b'{"ts":"2026-11-24T10:00:00.123Z","metric":"disk.reads","value":250,"bucket":-1,'
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


def test_a_field_no_column_takes_refuses_the_batch():
    """The loader then inserts it as JSONEachRow, which ClickHouse refuses, and dead-letters the message."""
    with pytest.raises(pa.ArrowInvalid, match="unexpected field"):
        arrow.Target(COLUMNS).table([b'{"metric":"m"}', b'{"renamed_metric":"m"}'])


def test_a_column_of_a_type_it_does_not_map_is_left_out_unless_a_message_sets_it():
    target = arrow.Target([*COLUMNS, ("tags", "Map(LowCardinality(String), String)")])
    assert "tags" not in target.schema.names
    assert target.table([b'{"metric":"m"}']).num_rows == 1
    with pytest.raises(pa.ArrowInvalid):
        target.table([b'{"metric":"m","tags":{"a":"b"}}'])

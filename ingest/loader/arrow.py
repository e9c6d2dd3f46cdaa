"""A batch of JSON messages as one Arrow table, parsed in C++ by pyarrow and inserted columnar: the
embedded ClickHouse takes Arrow at about 2 million rows/s (docs/benchmarks.md), where its own parse of
JSONEachRow ran at a few hundred thousand rows/s on the same machine.

The table's columns set the Arrow schema; a message's fields outside it are ignored and a column it
lacks is null (ClickHouse stores its default), as with JSONEachRow. A column of a type not mapped here
(a Map, an Array) is left out of the schema: a batch in which a message sets it goes as JSONEachRow.

A table whose messages carry several rows each (telemetry.samples: a record's samples) names the field that
holds them (`rows`): a list of objects, each a row whose columns it does not set are the message's."""

from __future__ import annotations

import io
import json
import re

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import json as pa_json

_TYPES = {
    "String": pa.string(),
    "Float64": pa.float64(),
    "Float32": pa.float64(),
    "Bool": pa.bool_(),
    "Date": pa.date32(),
    **{f"{sign}Int{bits}": pa.int64() for sign in ("", "U") for bits in (8, 16, 32, 64)},
}


def _arrow_type(ch_type: str) -> pa.DataType | None:
    inner = re.fullmatch(r"(?:LowCardinality|Nullable)\((.*)\)", ch_type)
    if inner:
        return _arrow_type(inner.group(1))
    if ch_type.startswith("DateTime64(3"):
        return pa.timestamp("ms", tz="UTC")
    if ch_type.startswith("DateTime"):
        return pa.timestamp("s", tz="UTC")
    return _TYPES.get(ch_type)


class Target:
    """How a table's batches become Arrow: the schema of its mapped columns, the fields it cannot map."""

    def __init__(self, columns: list[tuple[str, str]], rows: str | None = None):
        mapped = [(name, _arrow_type(ch_type)) for name, ch_type in columns]
        self.schema = pa.schema([(name, t) for name, t in mapped if t is not None])
        self.unmapped = [f'"{name}":'.encode() for name, t in mapped if t is None]
        self.rows = rows
        self.parsed = self.schema.append(pa.field(rows, pa.list_(pa.struct(self.schema)))) if rows else self.schema

    def table(self, lines: list[bytes]) -> pa.Table:
        """The JSON lines as an Arrow table; raises pyarrow.ArrowInvalid on a line that does not fit."""
        if self.unmapped and any(field in line for line in lines for field in self.unmapped):
            raise pa.ArrowInvalid("a message sets a column of a type the columnar path does not map")
        options = pa_json.ParseOptions(explicit_schema=self.parsed, unexpected_field_behavior="ignore")
        table = pa_json.read_json(io.BytesIO(b"\n".join(lines)), parse_options=options)
        return self._unnest(table) if self.rows else table

    def _unnest(self, messages: pa.Table) -> pa.Table:
        """A row per element of each message's rows: its own value of a column, else the message's."""
        nested = messages.column(self.rows).combine_chunks()
        items, parents = pc.list_flatten(nested), pc.list_parent_indices(nested)
        columns = []
        for field in self.schema:
            own, shared = items.field(field.name), messages.column(field.name)
            if own.null_count == len(own):
                columns.append(shared.take(parents))
            elif shared.null_count == 0 and own.null_count == 0:
                columns.append(own)
            else:
                columns.append(pc.coalesce(own, shared.take(parents)))
        return pa.Table.from_arrays(columns, schema=self.schema)


def unnest(line: bytes, rows: str) -> list[bytes]:
    """The JSON lines of one message's rows (the JSONEachRow path's counterpart of Target._unnest). A message
    that is not of that shape is left whole, for ClickHouse to refuse by name."""
    try:
        message = json.loads(line)
        shared = {k: v for k, v in message.items() if k != rows}
        return [json.dumps({**shared, **{k: v for k, v in r.items() if v is not None}}).encode() for r in message[rows]]
    except (ValueError, TypeError, KeyError, AttributeError):
        return [line]

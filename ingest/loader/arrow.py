"""A batch of JSON messages as one Arrow table, parsed in C++ by pyarrow and inserted columnar: the
embedded ClickHouse takes Arrow at about 2 million rows/s (docs/benchmarks.md), where its own parse of
JSONEachRow ran at a few hundred thousand rows/s on the same machine.

The table's columns set the Arrow schema; a column a message lacks is null (ClickHouse stores its default), as
with JSONEachRow, and a field outside them fails the batch, which then goes as JSONEachRow: ClickHouse refuses the
message that has it (the loader dead-letters it). A column of a type not mapped here (a Map, an Array) is left
out of the schema: a batch in which a message sets it goes as JSONEachRow."""

from __future__ import annotations

import io
import re

import pyarrow as pa
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

    def __init__(self, columns: list[tuple[str, str]]):
        mapped = [(name, _arrow_type(ch_type)) for name, ch_type in columns]
        self.schema = pa.schema([(name, t) for name, t in mapped if t is not None])
        self.unmapped = [f'"{name}":'.encode() for name, t in mapped if t is None]

    def table(self, lines: list[bytes]) -> pa.Table:
        """The JSON lines as an Arrow table; raises pyarrow.ArrowInvalid on a line that does not fit."""
        if self.unmapped and any(field in line for line in lines for field in self.unmapped):
            raise pa.ArrowInvalid("a message sets a column of a type the columnar path does not map")
        options = pa_json.ParseOptions(explicit_schema=self.schema, unexpected_field_behavior="error")
        return pa_json.read_json(io.BytesIO(b"\n".join(lines)), parse_options=options)

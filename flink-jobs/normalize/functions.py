"""The normalize job's one Python function: decode a raw record (decode.py) as a table function.

It returns one row per record, with the record's counts (samples, unknown fields) for the
accounting; the samples travel as one string (fields joined by U+001F, samples by U+001E) that Flink
SQL splits again. This measured no faster than a row per sample (docs/benchmarks.md); it keeps the
record-level accounting in one row.
"""

from pyflink.table import DataTypes as T
from pyflink.table.udf import TableFunction, udtf

from flink_jobs.normalize.decode import decode, load_catalog

FIELD, RECORD = "\x1f", "\x1e"
COLUMNS = ["outcome", "reason", "detail", "series", "ts_ms", "entity", "samples", "n_samples", "n_unknown"]
RESULT_TYPES = [T.STRING(), T.STRING(), T.STRING(), T.STRING(), T.BIGINT(), T.STRING(), T.STRING(), T.INT(), T.INT()]


def encode(d) -> tuple:
    samples = RECORD.join(
        FIELD.join((s.metric, s.kind, s.unit, str(s.bucket), repr(s.num), "" if s.den is None else repr(s.den)))
        for s in d.samples
    )
    return (
        d.outcome,
        d.reason,
        d.detail,
        d.series,
        d.ts_ms,
        FIELD.join(d.entity),
        samples,
        len(d.samples) + len(d.unknown_fields),
        len(d.unknown_fields),
    )


class DecodeRecord(TableFunction):
    def open(self, function_context):
        self.catalog = load_catalog()

    def eval(self, payload, arrival_ms):
        yield encode(decode(payload, arrival_ms, self.catalog))


decode_record = udtf(DecodeRecord(), result_types=RESULT_TYPES)

"""The normalise job's one Python function: decode a raw record (decode.py) as a table function."""
from pyflink.table import DataTypes
from pyflink.table.udf import TableFunction, udtf

from normalize.decode import ENTITY_KEYS, decode, load_catalog

T = DataTypes
RESULT_TYPES = [T.BOOLEAN(), T.STRING(), T.STRING(), T.STRING(), T.STRING(), T.STRING(), T.STRING(), T.STRING(),
                T.INT(), T.DOUBLE(), T.DOUBLE(), T.BIGINT(), *[T.STRING()] * len(ENTITY_KEYS)]


class DecodeRecord(TableFunction):
    def open(self, function_context):
        self.catalog = load_catalog()

    def eval(self, payload, arrival_ms):
        yield from decode(payload, arrival_ms, self.catalog)


decode_record = udtf(DecodeRecord(), result_types=RESULT_TYPES)

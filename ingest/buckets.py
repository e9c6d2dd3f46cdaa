"""The 3PAR service-time histogram buckets, in Python (clickhouse/migrations/0006 has them in SQL; a test
keeps the two and the System Reporter's own figures in step). Bucket n (0..31) holds service times above
2^(n-8) ms (above 0 for n = 0) up to 2^(n-7) ms: 7.8125 us, 15.625 us, ..., 0.125 ms (n = 4), ...;
bucket 31 is open-ended."""

from __future__ import annotations

import math

COUNT = 32
BUCKET_0_125_MS = 4  # (0.0625, 0.125] ms, the Express Writes study's bar; buckets 0..4 are within 0.125 ms


def upper_ms(n: int) -> float:
    return math.inf if n == COUNT - 1 else 2.0 ** (n - 7)


def lower_ms(n: int) -> float:
    return 0.0 if n == 0 else 2.0 ** (n - 8)


UPPER_MS = [upper_ms(n) for n in range(COUNT)]


def bucket_of(ms: float) -> int:
    """The bucket a service time in ms falls in."""
    return 0 if ms <= upper_ms(0) else min(COUNT - 1, math.ceil(math.log2(ms)) + 7)

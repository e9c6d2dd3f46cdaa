"""Benchmark: insert rows/s through the embedded server with clickhouse-connect, versus chdb in-process.

The ratio is the cost of the HTTP interface. Both insert the same column-oriented data (a timestamp,
two LowCardinality keys, a Float64) into the same MergeTree table shape, in the same run.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_embedded_insert [--rows 2000000] [--batch 200000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import tempfile
import time
from pathlib import Path

from tests.support import ROOT

TABLE = (
    "CREATE TABLE bench.samples (ts DateTime64(3, 'UTC'), host LowCardinality(String), "
    "metric LowCardinality(String), value Float64) ENGINE = MergeTree ORDER BY (metric, host, ts)"
)


def columns(rows: int):
    import pyarrow as pa

    t0 = int(dt.datetime(2026, 11, 1, tzinfo=dt.UTC).timestamp() * 1000)
    return pa.table(
        {
            "ts": pa.array([t0 + i * 10 for i in range(rows)], pa.timestamp("ms", tz="UTC")),
            "host": pa.array([f"sql{i % 500:03d}" for i in range(rows)]),
            "metric": pa.array([("read_us", "write_us", "reads", "writes")[i % 4] for i in range(rows)]),
            "value": pa.array([float(i % 1000) for i in range(rows)]),
        }
    )


def via_http(data, batch: int, work: Path, compress: str) -> float:
    from tests.support import EmbeddedServer

    server = EmbeddedServer(work / f"http-{compress}").start()
    try:
        client = server.client(compress=compress)
        client.command("CREATE DATABASE bench")
        client.command(TABLE)
        t = time.perf_counter()
        for start in range(0, data.num_rows, batch):
            client.insert_arrow("bench.samples", data.slice(start, batch))
        elapsed = time.perf_counter() - t
        assert client.command("SELECT count() FROM bench.samples") == data.num_rows
        return data.num_rows / elapsed
    finally:
        server.stop()


def in_process(data, batch: int, work: Path) -> float:
    from chdb import session

    s = session.Session(str(work / "direct"))
    s.query("CREATE DATABASE bench")
    s.query(TABLE)
    t = time.perf_counter()
    for start in range(0, data.num_rows, batch):
        part = data.slice(start, batch)  # noqa: F841 (read by chdb's Python() table function)
        s.query("INSERT INTO bench.samples SELECT * FROM Python(part)")
    elapsed = time.perf_counter() - t
    assert int(s.query("SELECT count() FROM bench.samples", "CSV").bytes()) == data.num_rows
    s.close()
    return data.num_rows / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--batch", type=int, default=200_000)
    args = ap.parse_args()
    data = columns(args.rows)
    work = Path(tempfile.mkdtemp(dir=os.environ.get("TMPDIR", ROOT / ".sanlens")))
    try:
        direct = in_process(data, args.batch, work)
        results = {c: via_http(data, args.batch, work, c) for c in ("lz4", "zstd", None)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"rows {args.rows:,} in batches of {args.batch:,} (ts, host, metric, value), {os.cpu_count()} cores")
    print(f"chdb in-process (Arrow via Python())         {direct:12,.0f} rows/s")
    for codec, rate in results.items():
        print(
            f"embedded server, clickhouse-connect {str(codec or 'none'):<5} (Arrow) {rate:12,.0f} rows/s  "
            f"= {rate / direct:.2f} of in-process"
        )


if __name__ == "__main__":
    main()

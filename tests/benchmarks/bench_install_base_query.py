"""Benchmark: the install-base query over 30 days of hourly rollups for 1,000 arrays x 50 volumes.

Backfills a scratch database on the stack's ClickHouse with hourly service-time histograms per
volume, in the shape of sanlens.service_time_hist_1h (read and write, 8 occupied buckets per volume
and hour; two array models, 20 customers; 80% of the arrays move from 3.1.3 to 3.2.1 halfway), rolls
them up per array with the loader's own rollup SQL (ingest/loader/rollups.py), then runs the
install_base_histogram model's own SQL (dbt/models, staging view inlined) 5 times and prints the
median. For comparison, the same query straight on the per-volume rollup once. Needs
`./sanlens up`; the scratch database is dropped at the end unless --keep.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_install_base_query [--days 30] [--arrays 1000] [--volumes 50]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

from ingest.loader import rollups
from sanlensctl import db
from tests.support import ROOT

MODELS = ROOT / "dbt" / "models"
BUCKETS = 8


def model_sql(database: str) -> str:
    """install_base_histogram as dbt compiles it, reading `database`'s tables through its staging view."""

    def plain(path: Path) -> str:
        return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--"))

    staging = plain(MODELS / "staging" / "stg_array_service_time_hist.sql")
    staging = re.sub(r"\{\{\s*source\('sanlens',\s*'(\w+)'\)\s*\}\}", rf"{database}.\1", staging)
    mart = plain(MODELS / "marts" / "install_base_histogram.sql")
    return re.sub(r"\{\{\s*ref\('stg_array_service_time_hist'\)\s*\}\}", f"({staging})", mart)


def backfill(client, table: str, days: int, arrays: int, volumes: int) -> int:
    per_hour = arrays * volumes * 2 * BUCKETS
    for day in range(days):
        t0 = time.perf_counter()
        client.command(f"""
            INSERT INTO {table} (period_start, source, customer, site, array, array_model, firmware, volume,
                                 host, disk, host_port, direction, bucket, ios)
            SELECT
                toStartOfHour(now()) - INTERVAL {days} DAY + INTERVAL intDiv(n, {per_hour}) HOUR AS period_start,
                'array',
                concat('customer', toString(a % 20)),
                concat('customer', toString(a % 20), '-dc'),
                concat('af', leftPad(toString(a), 4, '0')) AS array,
                if(a % 2 = 0, 'AF8000', 'AF9000'),
                if(a % 5 != 0 AND intDiv(n, {per_hour}) >= {days * 12}, '3.2.1', '3.1.3'),
                concat(array, '-v', toString(intDiv(n, 16) % {volumes})),
                '', '', '',
                if(intDiv(n, {BUCKETS}) % 2 = 0, 'read', 'write'),
                toUInt8(2 + n % {BUCKETS}) AS bucket,
                toUInt64(1000 + cityHash64(n) % 50000)
            FROM (SELECT number + {day * 24 * per_hour} AS n, intDiv(number, {volumes * 2 * BUCKETS}) % {arrays} AS a
                  FROM numbers({24 * per_hour}))""")
        print(f"  day {day + 1}/{days}: {24 * per_hour:,} rows in {time.perf_counter() - t0:.1f} s", flush=True)
    return days * 24 * per_hour


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--arrays", type=int, default=1000)
    ap.add_argument("--volumes", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    ap.add_argument("--per-volume", action="store_true", help="also time the query on the per-volume rollup")
    args = ap.parse_args()
    client = db.client(send_receive_timeout=3600)
    scratch = f"bench_{uuid.uuid4().hex[:6]}"
    table = f"{scratch}.service_time_hist_1h"
    client.command(f"CREATE DATABASE {scratch}")
    try:
        client.command(f"CREATE TABLE {table} AS sanlens.service_time_hist_1h")
        client.command(f"CREATE TABLE {scratch}.service_time_hist_array_1h AS sanlens.service_time_hist_array_1h")
        t0 = time.perf_counter()
        rows = backfill(client, table, args.days, args.arrays, args.volumes)
        print(
            f"backfilled {rows:,} rows ({args.days} days x {args.arrays} arrays x {args.volumes} volumes x 2 "
            f"directions x {BUCKETS} buckets) in {time.perf_counter() - t0:.0f} s",
            flush=True,
        )
        t0 = time.perf_counter()
        level = next(level for level in rollups.LEVELS if level.table == "service_time_hist_array_1h")
        client.command(rollups.insert_sql(level, scratch, since=False))
        per_array = client.command(f"SELECT count() FROM {scratch}.service_time_hist_array_1h")
        print(f"rolled up per array: {per_array:,} rows in {time.perf_counter() - t0:.0f} s", flush=True)
        query = f"SELECT count(), sum(ios), sum(share), sum(arrays) FROM ({model_sql(scratch)})"
        timings = []
        for run in range(args.runs):
            t0 = time.perf_counter()
            result = client.query(query).result_rows[0]
            timings.append((time.perf_counter() - t0) * 1000)
            print(f"  run {run + 1}: {timings[-1]:,.0f} ms ({result[0]:,} mart rows, {result[1]:,} I/Os)", flush=True)
        print(
            f"\ninstall-base query over {args.days} days of hourly rollups ({per_array:,} rows per array, from "
            f"{rows:,} per volume): median of {args.runs} runs {statistics.median(timings):,.0f} ms "
            f"(min {min(timings):,.0f}, max {max(timings):,.0f})"
        )
        if args.per_volume:
            per_volume = query.replace(f"{scratch}.service_time_hist_array_1h", table)
            t0 = time.perf_counter()
            client.query(per_volume)
            print(f"the same query on the per-volume rollup: {(time.perf_counter() - t0) * 1000:,.0f} ms (1 run)")
        return 0
    finally:
        if not args.keep:
            client.command(f"DROP DATABASE {scratch}")


if __name__ == "__main__":
    sys.exit(main())

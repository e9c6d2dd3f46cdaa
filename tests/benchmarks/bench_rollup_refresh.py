"""Benchmark: the rollup refresh after one hour of service-time histograms arrived, level by level.

Copies the stack's 10 s service-time histograms and firmware timeline into a scratch database on the
stack's ClickHouse (fill the stack first, e.g. with the 200-array backfill of the README), rolls all of it
up with the loader's own SQL (ingest/loader/rollups.py), then re-delivers the last whole hour of 10 s rows
(new `loaded_at`, the same keys: they collapse like any re-delivery) and times the refresh of each level
for the periods that received them, as the loader runs it. Never writes into the stack's own tables; the
scratch database is dropped at the end.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_rollup_refresh [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

from ingest.loader import rollups
from sanlensctl import db


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    client = db.client(send_receive_timeout=3600)
    held = client.command(f"SELECT count() FROM sanlens.{rollups.BASE}")
    if not held:
        print("the stack holds no service-time histograms: play a fleet first (./sanlens demo ...)")
        return 1
    scratch = f"bench_{uuid.uuid4().hex[:6]}"
    client.command(f"CREATE DATABASE {scratch}")
    try:
        for table in (rollups.BASE, "topology", *(level.table for level in rollups.LEVELS)):
            client.command(f"CREATE TABLE {scratch}.{table} AS sanlens.{table}")
        for table in (rollups.BASE, "topology"):
            client.command(f"INSERT INTO {scratch}.{table} SELECT * FROM sanlens.{table}")
        t0 = time.perf_counter()
        for level in rollups.LEVELS:
            rollups.refresh_level(client, level, scratch)
        hours = client.command(f"SELECT uniqExact(toStartOfHour(window_start)) FROM {scratch}.{rollups.BASE}")
        print(f"{held:,} rows of 10 s histograms over {hours} hours rolled up in {time.perf_counter() - t0:.1f} s")

        last_whole_hour = "toStartOfHour(max(window_start)) - INTERVAL 1 HOUR"
        hour = client.command(f"SELECT {last_whole_hour} FROM {scratch}.{rollups.BASE}")
        timings: dict[str, list[float]] = {level.table: [] for level in rollups.LEVELS}
        for run in range(args.runs):
            since = client.command("SELECT now64(3)")
            client.command(
                f"""INSERT INTO {scratch}.{rollups.BASE} SELECT * REPLACE (now64(3) AS loaded_at)
                FROM {scratch}.{rollups.BASE} FINAL WHERE toStartOfHour(window_start) = {{hour:DateTime('UTC')}}""",
                parameters={"hour": hour},
            )
            for level in rollups.LEVELS:
                t0 = time.perf_counter()
                rollups.refresh_level(client, level, scratch, since)
                timings[level.table].append(time.perf_counter() - t0)
            total = sum(t[-1] for t in timings.values())
            print(f"  run {run + 1}: the hour from {hour} refreshed in {total:.2f} s", flush=True)
        rows = client.command(
            f"SELECT count() FROM {scratch}.{rollups.BASE} FINAL WHERE toStartOfHour(window_start) = "
            "{hour:DateTime('UTC')}",
            parameters={"hour": hour},
        )
        print(f"\nrefresh of one hour that received {rows:,} rows again (median of {args.runs} runs):")
        for table, seconds in timings.items():
            print(f"  {table:<28} {statistics.median(seconds):6.2f} s")
        print(f"  {'all levels':<28} {statistics.median(map(sum, zip(*timings.values()))):6.2f} s")
        return 0
    finally:
        client.command(f"DROP DATABASE {scratch}")


if __name__ == "__main__":
    sys.exit(main())

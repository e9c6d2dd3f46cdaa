"""Benchmark: the fleet queries over 30 days of 1,000 arrays x 50 volumes, and the rollup of one new hour.

Fills a scratch database on the stack's ClickHouse with 30 days of hourly service-time histograms (read
and write, 8 occupied buckets; two array models, 20 customers; 80% of the arrays move from 3.1.3 to
3.2.1 halfway), rolls them up with the loader's own SQL (ingest/loader/rollups.py), then prints:
- the install-base query: the install_base_histogram model's own SQL (dbt/models, staging view inlined),
  median of 5 runs; for comparison, the SQL it replaced (per-array level, FINAL) once;
- the percentiles query: the model level of latency_percentiles, the model's own SQL with its per-array
  and per-volume inputs emptied, median of 5 runs; its site and array levels (per-array level) once;
- the incremental refresh of one new hour, 3 times: the hour's per-volume rows arrive in
  service_time_hist_1h and the loader's refresh of every level above it (_array_1h, _fleet_1h) is
  timed for the periods that received them; apart, the day level (_1d), which the loader recomputes
  once a day has ended, re-reading the day's volumes: its cost once a day, not once an hour.

What is affordable: the per-array and fleet levels hold all 30 days x 1,000 arrays (11.5 M and 34,560
rows, the shape the queries read); the per-volume level only holds the day of the new hours (21 hours,
16.8 M rows at 50 volumes), which is all that any refresh of a new hour reads from it. The per-array
rows of the days before are generated in place, in the same number and shape as the roll-up of 560 M
per-volume rows would give (that roll-up took 310 s: a first load's cost, not a query's). The 10 s and
1 minute levels are not filled (the refresh of one hour of them at 200 arrays: bench_rollup_refresh);
a refresh finds the hour it recomputes from one 10 s row that marks it, as the loader finds it from
the rows it loaded. Needs `./sanlens up`; the scratch database is dropped at
the end unless --keep.

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
ABOVE_THE_HOUR = ("service_time_hist_1d", "service_time_hist_array_1h", rollups.FLEET.table)
# install_base_histogram as it read the per-array level before the fleet level existed
PER_ARRAY_INSTALL_BASE = """
    SELECT array_model, firmware, direction, period_start, bucket, sum(ios) AS ios,
        ios / sum(ios) OVER (PARTITION BY array_model, firmware, direction, period_start) AS share,
        uniqExact(array) AS arrays
    FROM %s.service_time_hist_array_1h FINAL
    GROUP BY array_model, firmware, direction, period_start, bucket"""


def plain(path: Path) -> str:
    return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--"))


def model_sql(database: str, mart: str, empty: tuple[str, ...] = ()) -> str:
    """A mart as dbt compiles it, reading `database`'s tables through its staging views (those in `empty`
    read nothing)."""

    def staging(match: re.Match) -> str:
        sql = plain(MODELS / "staging" / f"{match.group(1)}.sql")
        sql = re.sub(r"\{\{\s*source\('sanlens',\s*'(\w+)'\)\s*\}\}", rf"{database}.\1", sql)
        return f"(SELECT * FROM ({sql}) WHERE 0)" if match.group(1) in empty else f"({sql})"

    return re.sub(r"\{\{\s*ref\('(\w+)'\)\s*\}\}", staging, plain(MODELS / "marts" / f"{mart}.sql"))


def rows_sql(level: str, arrays: int, volumes: int, hours: int, half: int) -> str:
    """Rows of one level (per volume or per array) for `hours` hours from {start}, hour index {first} on."""
    rows_per_array, scale = (1, volumes) if level == "array" else (volumes, 1)  # an array's row sums its volumes
    per_hour = arrays * rows_per_array * 2 * BUCKETS
    volume = (
        ""
        if level == "array"
        else f"\n            concat(array, '-v', toString(intDiv(n, {2 * BUCKETS}) % {volumes})),"
    )
    ios = f"{scale * 1000} + cityHash64(n) % {scale * 50000}"
    return f"""
        SELECT
            {{start:DateTime('UTC')}} + INTERVAL h HOUR AS period_start,
            'array',
            concat('customer', toString(a % 20)),
            concat('customer', toString(a % 20), '-dc'),
            concat('af', leftPad(toString(a), 4, '0')) AS array,
            if(a % 2 = 0, 'AF8000', 'AF9000'),
            if(a % 5 != 0 AND h >= {half}, '3.2.1', '3.1.3'),{volume}
            if(intDiv(n, {BUCKETS}) % 2 = 0, 'read', 'write'),
            toUInt8(2 + n % {BUCKETS}),
            toUInt64({ios})
        FROM (SELECT number AS n, {{first:UInt32}} + intDiv(number, {per_hour}) AS h,
                     intDiv(number, {rows_per_array * 2 * BUCKETS}) % {arrays} AS a
              FROM numbers({hours * per_hour}))"""


def timed(client, sql: str, runs: int, what: str) -> list[float]:
    timings = []
    for run in range(runs):
        t0 = time.perf_counter()
        result = client.query(sql).result_rows[0]
        timings.append((time.perf_counter() - t0) * 1000)
        print(f"  {what}, run {run + 1}: {timings[-1]:,.0f} ms ({result[0]:,} rows, {result[1]:,} I/Os)", flush=True)
    return timings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--arrays", type=int, default=1000)
    ap.add_argument("--volumes", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--new-hours", type=int, default=3, help="new hours rolled up one after the other")
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = ap.parse_args()
    client = db.client(send_receive_timeout=3600)
    scratch = f"bench_{uuid.uuid4().hex[:6]}"
    client.command(f"CREATE DATABASE {scratch}")
    try:
        for table in (rollups.BASE, "service_time_hist_1h", *ABOVE_THE_HOUR):
            client.command(f"CREATE TABLE {scratch}.{table} AS sanlens.{table}")
        # hours 0 .. days*24-1 held, then the new ones: the last hours of the day that ends at midnight today
        hours, new = args.days * 24, args.new_hours
        start = client.command(f"SELECT toStartOfDay(now('UTC')) - INTERVAL {hours + new} HOUR")
        per_volume_from = hours + new - 24  # the hours of the new hours' day before them, per volume
        columns = "period_start, source, customer, site, array, array_model, firmware, volume, direction, bucket, ios"
        array_columns = columns.replace("volume, ", "")
        t0 = time.perf_counter()
        client.command(
            f"INSERT INTO {scratch}.service_time_hist_array_1h ({array_columns}) "
            f"{rows_sql('array', args.arrays, args.volumes, per_volume_from, hours // 2)}",
            parameters={"start": start, "first": 0},
        )
        print(f"per array: {per_volume_from} hours in {time.perf_counter() - t0:.0f} s", flush=True)
        t0 = time.perf_counter()
        client.command(
            f"INSERT INTO {scratch}.service_time_hist_1h ({columns}) "
            f"{rows_sql('volume', args.arrays, args.volumes, 24 - new, hours // 2)}",
            parameters={"start": start, "first": per_volume_from},
        )
        print(f"per volume: {24 - new} hours in {time.perf_counter() - t0:.0f} s", flush=True)
        t0 = time.perf_counter()
        for table in ABOVE_THE_HOUR:
            rollups.refresh_level(client, next(lv for lv in rollups.LEVELS if lv.table == table), scratch)
        counts = {
            table: client.command(f"SELECT count() FROM {scratch}.{table}")
            for table in ("service_time_hist_1h", *ABOVE_THE_HOUR)
        }
        print(
            f"rolled up in {time.perf_counter() - t0:.0f} s: "
            + ", ".join(f"{table} {n:,} rows" for table, n in counts.items()),
            flush=True,
        )

        install_base = (
            f"SELECT count(), sum(ios), sum(share), sum(arrays) FROM ({model_sql(scratch, 'install_base_histogram')})"
        )
        base_ms = timed(client, install_base, args.runs, "install-base query")
        old_ms = timed(
            client,
            install_base.replace(model_sql(scratch, "install_base_histogram"), PER_ARRAY_INSTALL_BASE % scratch),
            1,
            "the same on the per-array level, FINAL (before)",
        )
        percentiles = "SELECT count(), sum(ios), sum(latency_ms) FROM ({})"
        model_ms = timed(
            client,
            percentiles.format(
                model_sql(scratch, "latency_percentiles", ("stg_array_service_time_hist", "stg_service_time_hist"))
            ),
            args.runs,
            "percentiles query, model level",
        )
        array_ms = timed(
            client,
            percentiles.format(
                model_sql(scratch, "latency_percentiles", ("stg_fleet_service_time_hist", "stg_service_time_hist"))
            ),
            1,
            "percentiles, site and array levels",
        )

        refresh: dict[str, list[float]] = {table: [] for table in ABOVE_THE_HOUR}
        for i in range(new):
            hour = client.query(
                f"SELECT {{start:DateTime('UTC')}} + INTERVAL {hours + i} HOUR", parameters={"start": start}
            ).result_rows[0][0]
            since = client.command("SELECT now64(3)")
            t0 = time.perf_counter()
            client.command(
                f"INSERT INTO {scratch}.service_time_hist_1h ({columns}) "
                f"{rows_sql('volume', args.arrays, args.volumes, 1, hours // 2)}",
                parameters={"start": start, "first": hours + i},
            )
            client.command(
                f"INSERT INTO {scratch}.{rollups.BASE} (window_start, window_s, sample_ts, source, site, array, "
                "direction, bucket, ios) VALUES ({h:DateTime64(3, 'UTC')}, 10, {h:DateTime64(3, 'UTC')}, 'array', "
                "'customer1-dc', 'af0001', 'write', 4, 0)",
                parameters={"h": hour},
            )
            arrived = time.perf_counter() - t0
            for table in ABOVE_THE_HOUR:
                t0 = time.perf_counter()
                level = next(lv for lv in rollups.LEVELS if lv.table == table)
                rollups.refresh_level(client, level, scratch, since)
                refresh[table].append(time.perf_counter() - t0)
            print(
                f"  new hour {hour:%Y-%m-%d %H:00} ({args.arrays * args.volumes * 2 * BUCKETS:,} per-volume rows, "
                f"written in {arrived:.1f} s) rolled up in {sum(t[-1] for t in refresh.values()):.2f} s: "
                + ", ".join(f"{table} {t[-1]:.2f} s" for table, t in refresh.items()),
                flush=True,
            )
        fleet = client.command(f"SELECT count() FROM {scratch}.{rollups.FLEET.table}")

        def summary(ms: list[float]) -> str:
            return f"{statistics.median(ms):,.0f} ms (min {min(ms):,.0f}, max {max(ms):,.0f})"

        print(f"\n{args.days} days x {args.arrays:,} arrays x {args.volumes} volumes ({fleet:,} fleet rows):")
        print(f"  install-base query, median of {args.runs}:             {summary(base_ms)}")
        print(f"  the same from the per-array level, FINAL, 1 run:   {old_ms[0]:,.0f} ms")
        print(f"  percentiles query (model level), median of {args.runs}:  {summary(model_ms)}")
        print(f"  percentiles, site and array levels, 1 run:         {array_ms[0]:,.0f} ms")
        to_fleet = [a + f for a, f in zip(refresh["service_time_hist_array_1h"], refresh[rollups.FLEET.table])]
        print(f"  refresh of one new hour (per array and fleet), median of {new}: {statistics.median(to_fleet):.2f} s")
        for table, seconds in refresh.items():
            print(f"    {table:<28} {statistics.median(seconds):.2f} s")
        print("  (service_time_hist_1d: once a day, at the first refresh after the day ended)")
        return 0
    finally:
        if not args.keep:
            client.command(f"DROP DATABASE {scratch}")


if __name__ == "__main__":
    sys.exit(main())

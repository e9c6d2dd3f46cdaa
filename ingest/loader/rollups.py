"""Service-time histogram rollups: sanlens.service_time_hist_10s -> _1m -> _1h -> _1d, _1h -> _array_1h,
and _array_1h -> _fleet_1h.

Each level is recomputed from the level below, read FINAL, for every period that received rows
(loaded_at) since a given time, and replaces that period's previous rows: ReplacingMergeTree by
refreshed_at for the per-series and per-array levels (read FINAL), whole days swapped in with
REPLACE PARTITION for the fleet level (read as it is). A window delivered twice, a late sample, or a
rollup run twice therefore counts once. The 1 minute level attributes every sample to its array's
customer, model and firmware at the sample's time (sanlens.topology); the levels above keep that
attribution.

    python ingest/loader/rollups.py [--since '2026-11-22 10:00:00']   # default: everything
"""

from __future__ import annotations

import argparse
import sys
import uuid
from datetime import datetime
from typing import NamedTuple

from clickhouse.client import connect

BASE = "service_time_hist_10s"
READS = (f"sanlens.{BASE}", "sanlens.topology")  # the tables a refresh reads, as the loader names them
KEYS = "source, customer, site, array, array_model, firmware, volume, host, disk, host_port, direction, bucket"
ARRAY_KEYS = "source, customer, site, array, array_model, firmware, direction, bucket"
FLEET_KEYS = "array_model, firmware, direction, bucket"


class Level(NamedTuple):
    table: str
    unit: str  # the period
    below: str  # the level it is computed from
    keys: str = KEYS
    where: str = "1"
    values: str = "ios"  # the columns after the keys
    sums: str = "sum(ios)"  # and how they are computed from the level below
    # False: ReplacingMergeTree by refreshed_at, its touched periods inserted again (read FINAL);
    # True: MergeTree partitioned by day, every touched day recomputed and swapped in (read as it is)
    replaces_days: bool = False
    # True: takes a window only once its day has ended (see ENDED_DAYS)
    ended_days_only: bool = False


# Per series, then per array for the fleet views, which never need volumes (50 times fewer rows), then
# per model and firmware for the install base (330 times fewer again at 1,000 arrays). The fleet level
# replaces whole days rather than rows (replace_days): its readers, the marts, then need no FINAL, nor an
# argMax by refreshed_at, and a day whose arrays have all been deleted (a replaced span) is emptied, not
# left behind. A touched day costs two reads of that day of the per-array level (24 hours x 1,000 arrays
# x 32 buckets x 2 directions at most): 0.3 s at 8 buckets (docs/benchmarks.md), where the install-base
# query over the per-array level took 1.4-4.7 s. Its `arrays` are exact per hour, counted as the
# install-base mart counted them: the arrays with a row of that model, firmware, direction, hour, bucket.
FLEET = Level(
    "service_time_hist_fleet_1h",
    "HOUR",
    "service_time_hist_array_1h",
    FLEET_KEYS,
    values="ios, arrays",
    sums="sum(ios), uniqExact(array)",
    replaces_days=True,
)
LEVELS = [
    Level("service_time_hist_1m", "MINUTE", BASE),
    Level("service_time_hist_1h", "HOUR", "service_time_hist_1m"),
    Level("service_time_hist_1d", "DAY", "service_time_hist_1h", ended_days_only=True),
    Level("service_time_hist_array_1h", "HOUR", "service_time_hist_1h", ARRAY_KEYS, "source = 'array'"),
    FLEET,
]

# DB, UNIT, BELOW, KEYS_, WHERE_ and TOUCHED_ are filled in per level; {since:...} is a query parameter.
_FROM_10S = """
    SELECT toStartOfInterval(h.window_start, INTERVAL 1 UNIT) AS period, h.source, f.customer, h.site,
        h.array, f.model, f.firmware, h.volume, h.host, h.disk, h.host_port, h.direction, h.bucket, sum(h.ios)
    FROM (SELECT * FROM DB.BELOW FINAL WHERE TOUCHED_(window_start)) AS h
    ASOF LEFT JOIN (SELECT array, customer, model, firmware, valid_from FROM DB.topology FINAL
                    WHERE kind = 'array') AS f
        ON h.array = f.array AND h.sample_ts > f.valid_from
    GROUP BY period, h.source, f.customer, h.site, h.array, f.model, f.firmware, h.volume, h.host, h.disk,
        h.host_port, h.direction, h.bucket"""

_FROM_ROLLUP = """
    SELECT toStartOfInterval(period_start, INTERVAL 1 UNIT) AS period, KEYS_, SUMS_
    FROM DB.BELOW FINAL
    WHERE TOUCHED_(period_start) AND WHERE_
    GROUP BY period, KEYS_"""


# The day level reads a whole day of the per-volume hours for every day it recomputes (10 s at 1,000
# arrays x 50 volumes, docs/benchmarks.md): recomputed at every refresh while live data arrives, it would
# take the loader's time. So it takes a window only once the window's day (UTC) has ended, by ClickHouse's
# clock: a backfill's past days at once, a live day once, at the first refresh after midnight, which
# looks back to the start of the day before the last refresh's, for the windows left aside while their
# day was open (normalize refuses samples stamped more than 10 minutes ahead of their arrival). Until
# then the open day is in the hour level.
ENDED_DAYS = """loaded_at >= if(toDate({since:DateTime64(3, 'UTC')}) < toDate(now('UTC')),
        toStartOfDay({since:DateTime64(3, 'UTC')}) - INTERVAL 1 DAY, {since:DateTime64(3, 'UTC')})
        AND window_start < toStartOfDay(now('UTC'))"""


def insert_sql(level: Level, database: str = "sanlens", since: bool = True, into: str = "") -> str:
    """The INSERT that recomputes one level's periods that received 10 s rows since {since} (every
    period if `since` is False). A level that replaces days recomputes the days {days:Array(Date)}
    instead, into the table `into` (see `replace_days`)."""
    select = (_FROM_10S if level.below == BASE else _FROM_ROLLUP).replace("KEYS_", level.keys)
    select = select.replace("SUMS_", level.sums)
    column = "window_start" if level.below == BASE else "period_start"
    if level.replaces_days:
        touched = f"toDate({column}) IN {{days:Array(Date)}}"
    elif since:
        loaded = ENDED_DAYS if level.ended_days_only else "loaded_at >= {since:DateTime64(3, 'UTC')}"
        touched = (
            f"toStartOfInterval({column}, INTERVAL 1 UNIT) IN (SELECT DISTINCT toStartOfInterval(window_start, "
            f"INTERVAL 1 UNIT) FROM DB.{BASE} WHERE {loaded})"
        )
    else:
        touched = "1"
    select = select.replace("WHERE_", level.where).replace(f"TOUCHED_({column})", touched)
    select = select.replace("UNIT", level.unit).replace("BELOW", level.below).replace("DB.", f"{database}.")
    into = into or f"{database}.{level.table}"
    return f"INSERT INTO {into} (period_start, {level.keys}, {level.values}) {select}"


def touched_days(client, level: Level, database: str = "sanlens", since: datetime | None = None) -> list:
    """The days (UTC) that received 10 s rows since `since`; every day the level or the one below holds if None."""
    if since is not None:
        sql = (
            f"SELECT DISTINCT toDate(window_start) FROM {database}.{BASE} "
            "WHERE loaded_at >= {since:DateTime64(3, 'UTC')}"
        )
    else:
        sql = (
            f"SELECT DISTINCT toDate(period_start) FROM {database}.{level.below} UNION DISTINCT "
            f"SELECT DISTINCT toDate(period_start) FROM {database}.{level.table}"
        )
    return sorted(row[0] for row in client.query(sql, parameters={"since": since}).result_rows)


def replace_days(client, level: Level, days: list, database: str = "sanlens") -> None:
    """Recompute these days of a level that replaces days, each swapped in whole: REPLACE PARTITION is
    atomic, so a reader sees a day's previous rows or its new ones, never both, never neither. Two
    refreshes of the same day at once (the loader's and a demo's, a test's, or a replaced span's) could
    swap in the older of their two states last; so each refresh then checks the days against what the
    level below adds up to now, and recomputes those that differ (at most twice more; a later refresh of
    the day would mend it too)."""
    for _ in range(3):
        if not days:
            return
        _swap_in(client, level, days, database)
        days = _differing_days(client, level, days, database)


def _swap_in(client, level: Level, days: list, database: str) -> None:
    # computed into a table of this refresh's own, so that two refreshes at the same time never mix rows
    scratch = f"{level.table}__refresh_{uuid.uuid4().hex[:8]}"
    client.command(f"CREATE TABLE {database}.{scratch} AS {database}.{level.table}")
    try:
        client.command(
            insert_sql(level, database, into=f"{database}.{scratch}"),
            parameters={"days": days},
            settings={"max_partitions_per_insert_block": 0},
        )
        computed = {
            row[0]
            for row in client.query(f"SELECT DISTINCT toDate(period_start) FROM {database}.{scratch}").result_rows
        }
        for day in days:
            if day in computed:
                client.command(
                    f"ALTER TABLE {database}.{level.table} REPLACE PARTITION {day:%Y%m%d} FROM {database}.{scratch}"
                )
            else:  # no rows below any more (ClickHouse refuses to replace a partition with an empty one)
                client.command(f"ALTER TABLE {database}.{level.table} DROP PARTITION {day:%Y%m%d}")
    finally:
        client.command(f"DROP TABLE IF EXISTS {database}.{scratch}")


def _differing_days(client, level: Level, days: list, database: str) -> list:
    """The days whose rows and I/Os differ from what the level below adds up to now."""
    period = f"toStartOfInterval(period_start, INTERVAL 1 {level.unit})"
    held, below = (
        {day: (rows, ios) for day, rows, ios in client.query(sql, parameters={"days": days}).result_rows}
        for sql in (
            f"SELECT toDate(period_start) AS day, count(), sum(ios) FROM {database}.{level.table} "
            "WHERE day IN {days:Array(Date)} GROUP BY day",
            f"SELECT toDate(period_start) AS day, uniqExact({period}, {level.keys}), sum(ios) "
            f"FROM {database}.{level.below} FINAL WHERE day IN {{days:Array(Date)}} AND {level.where} GROUP BY day",
        )
    )
    return [day for day in days if held.get(day) != below.get(day)]


def refresh_level(client, level: Level, database: str = "sanlens", since: datetime | None = None) -> None:
    """Recompute one level's periods that received 10 s rows since `since` (every period if None)."""
    if level.replaces_days:
        replace_days(client, level, touched_days(client, level, database, since), database)
    else:
        client.command(insert_sql(level, database, since=since is not None), parameters={"since": since})


def last_refresh(client, margin_s: int = 300) -> datetime | None:
    """Where a restarted loader resumes: a while before the last refresh it (or another) made."""
    rows = client.query(
        f"SELECT max(refreshed_at) - INTERVAL {margin_s} SECOND, count() > 0 FROM sanlens.{LEVELS[0].table}"
    ).result_rows
    return rows[0][0] if rows[0][1] else None


def refresh(client, since: datetime | None = None) -> bool:
    """Recompute every rollup period that received rows since `since` (all if None); False if none did."""
    where = "WHERE loaded_at >= {since:DateTime64(3, 'UTC')}" if since else ""
    if not client.command(f"SELECT count() FROM sanlens.{BASE} {where}", parameters={"since": since}):
        return False
    for level in LEVELS:
        refresh_level(client, level, since=since)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clickhouse", default=None, help="ClickHouse URL (default: the local stack's)")
    ap.add_argument("--since", help="only periods that received rows since this UTC time (default: all)")
    args = ap.parse_args()
    since = datetime.fromisoformat(args.since) if args.since else None
    print("rolled up" if refresh(connect(args.clickhouse), since) else "nothing to roll up")
    return 0


if __name__ == "__main__":
    sys.exit(main())

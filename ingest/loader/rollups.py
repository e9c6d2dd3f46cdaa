"""Service-time histogram rollups: sanlens.service_time_hist_10s -> _1m -> _1h -> _1d, and _1h -> _array_1h.

Each level is recomputed from the level below, read FINAL, for every period that received rows
(loaded_at) since a given time, and replaces that period's previous rows (ReplacingMergeTree by
refreshed_at). A window delivered twice, a late sample, or a rollup run twice therefore counts once.
The 1 minute level attributes every sample to its array's customer, model and firmware at the
sample's time (sanlens.topology); the levels above keep that attribution.

    python ingest/loader/rollups.py [--since '2026-11-22 10:00:00']   # default: everything
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import NamedTuple

from clickhouse.client import connect

BASE = "service_time_hist_10s"
KEYS = "source, customer, site, array, array_model, firmware, volume, host, disk, host_port, direction, bucket"
ARRAY_KEYS = "source, customer, site, array, array_model, firmware, direction, bucket"


class Level(NamedTuple):
    table: str
    unit: str  # the period
    below: str  # the level it is computed from
    keys: str = KEYS
    where: str = "1"


# Per series, then per array for the fleet views, which never need volumes (50 times fewer rows).
LEVELS = [
    Level("service_time_hist_1m", "MINUTE", BASE),
    Level("service_time_hist_1h", "HOUR", "service_time_hist_1m"),
    Level("service_time_hist_1d", "DAY", "service_time_hist_1h"),
    Level("service_time_hist_array_1h", "HOUR", "service_time_hist_1h", ARRAY_KEYS, "source = 'array'"),
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
    SELECT toStartOfInterval(period_start, INTERVAL 1 UNIT) AS period, KEYS_, sum(ios)
    FROM DB.BELOW FINAL
    WHERE TOUCHED_(period_start) AND WHERE_
    GROUP BY period, KEYS_"""


def insert_sql(level: Level, database: str = "sanlens", since: bool = True) -> str:
    """The INSERT that recomputes one level's periods that received 10 s rows since {since} (every
    period if `since` is False)."""
    select = (_FROM_10S if level.below == BASE else _FROM_ROLLUP).replace("KEYS_", level.keys)
    column = "window_start" if level.below == BASE else "period_start"
    touched = (
        (
            f"toStartOfInterval({column}, INTERVAL 1 UNIT) IN (SELECT DISTINCT toStartOfInterval(window_start, "
            f"INTERVAL 1 UNIT) FROM DB.{BASE} WHERE loaded_at >= {{since:DateTime64(3, 'UTC')}})"
        )
        if since
        else "1"
    )
    select = select.replace("WHERE_", level.where).replace(f"TOUCHED_({column})", touched)
    select = select.replace("UNIT", level.unit).replace("BELOW", level.below).replace("DB.", f"{database}.")
    return f"INSERT INTO {database}.{level.table} (period_start, {level.keys}, ios) {select}"


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
        client.command(insert_sql(level, since=since is not None), parameters={"since": since})
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

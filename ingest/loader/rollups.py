"""Service-time histogram rollups: sanlens.service_time_hist_10s -> _1m -> _1h -> _1d.

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from sanlensctl import db  # noqa: E402

BASE = "sanlens.service_time_hist_10s"
# (table, period, the level it is computed from)
LEVELS = [("sanlens.service_time_hist_1m", "MINUTE", BASE),
          ("sanlens.service_time_hist_1h", "HOUR", "sanlens.service_time_hist_1m"),
          ("sanlens.service_time_hist_1d", "DAY", "sanlens.service_time_hist_1h")]
KEYS = "source, customer, site, array, array_model, firmware, volume, host, disk, host_port, direction, bucket"

# ClickHouse query parameters ({start:...}) stay as they are; UNIT and BELOW are filled in per level.
_FROM_10S = """
    SELECT toStartOfInterval(h.window_start, INTERVAL 1 UNIT) AS period, h.source, f.customer, h.site,
        h.array, f.model, f.firmware, h.volume, h.host, h.disk, h.host_port, h.direction, h.bucket, sum(h.ios)
    FROM (SELECT * FROM BELOW FINAL WHERE window_start >= {start:DateTime64(3, 'UTC')}
          AND window_start < {end:DateTime64(3, 'UTC')}) AS h
    ASOF LEFT JOIN (SELECT array, customer, model, firmware, valid_from FROM sanlens.topology FINAL
                    WHERE kind = 'array') AS f
        ON h.array = f.array AND h.sample_ts > f.valid_from
    GROUP BY period, h.source, f.customer, h.site, h.array, f.model, f.firmware, h.volume, h.host, h.disk,
        h.host_port, h.direction, h.bucket"""

_FROM_ROLLUP = f"""
    SELECT toStartOfInterval(period_start, INTERVAL 1 UNIT) AS period, {KEYS}, sum(ios)
    FROM BELOW FINAL
    WHERE period_start >= {{start:DateTime64(3, 'UTC')}} AND period_start < {{end:DateTime64(3, 'UTC')}}
    GROUP BY period, {KEYS}"""


def touched(client, since: datetime | None) -> tuple[datetime, datetime] | None:
    """The first and last 10 s window that received rows since `since` (all windows if None)."""
    where = "WHERE loaded_at >= {since:DateTime64(3, 'UTC')}" if since else ""
    first, last, n = client.query(f"SELECT min(window_start), max(window_start), count() FROM {BASE} {where}",
                                  parameters={"since": since}).result_rows[0]
    return (first, last) if n else None


def refresh(client, since: datetime | None = None) -> bool:
    """Recompute every rollup period that received rows since `since` (all if None); False if none did."""
    span = touched(client, since)
    if not span:
        return False
    for table, unit, below in LEVELS:
        start, end = client.query(
            f"SELECT toStartOfInterval({{f:DateTime64(3, 'UTC')}}, INTERVAL 1 {unit}), "
            f"toStartOfInterval({{l:DateTime64(3, 'UTC')}}, INTERVAL 1 {unit}) + INTERVAL 1 {unit}",
            parameters={"f": span[0], "l": span[1]}).result_rows[0]
        select = (_FROM_10S if below == BASE else _FROM_ROLLUP).replace("UNIT", unit).replace("BELOW", below)
        client.command(f"INSERT INTO {table} (period_start, {KEYS}, ios) {select}",
                       parameters={"start": start, "end": end})
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clickhouse", default=None, help="ClickHouse URL (default: the local stack's)")
    ap.add_argument("--since", help="only periods that received rows since this UTC time (default: all)")
    args = ap.parse_args()
    since = datetime.fromisoformat(args.since) if args.since else None
    print("rolled up" if refresh(db.client(args.clickhouse), since) else "nothing to roll up")
    return 0


if __name__ == "__main__":
    sys.exit(main())

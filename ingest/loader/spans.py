"""Replacing a span of a fleet's data: before a simulated fleet is played again over time the store
already holds for it (./sanlens demo run twice), that span's rows of its sites are deleted, so that the
store, the rollups and the marts hold the new run once and nothing of the earlier one over that span.

The span starts on the whole minute before its first sample, so that no minute holds rows of both runs.
Each table has the column its rows are placed in time by, and the period that column is aligned to: an
hour or a day that overlaps the span goes too, and is recomputed from the level below (which keeps the
earlier run's rows outside the span) when the new run's rows arrive. The fleet level
(service_time_hist_fleet_1h) has no site to delete by: the days the span overlaps are recomputed from
the per-array level right after the deletes, so no reader sees the earlier run's I/Os there."""

from __future__ import annotations

from datetime import datetime, timedelta

from ingest.loader import rollups

TABLES = [  # table, time column, the period the span's start is taken back to
    ("metrics", "ts", "1 MINUTE"),
    ("service_time_hist_10s", "window_start", "1 MINUTE"),
    ("service_time_hist_1m", "period_start", "1 MINUTE"),
    ("service_time_hist_1h", "period_start", "1 HOUR"),
    ("service_time_hist_array_1h", "period_start", "1 HOUR"),
    ("service_time_hist_1d", "period_start", "1 DAY"),
    ("topology", "valid_from", "1 MINUTE"),  # the earlier run's firmware timeline over the span
    # an episode of the earlier run that started in the span: the tiering job's detector starts a volume afresh when
    # its windows go back in time, and finds the new run's (the incidents stay: the breakdown's detector cannot tell
    # a replay, flink-jobs/breakdown/README.md)
    ("tier_episodes", "started_at", "1 MINUTE"),
]


def held(client, sites: list[str], start: datetime, end: datetime) -> int:
    """Samples the store holds for these sites in the span from start (taken back to its minute) to end."""
    return int(
        client.command(
            "SELECT count() FROM sanlens.metrics WHERE site IN {sites:Array(String)} AND ts "
            "BETWEEN toStartOfMinute({a:DateTime64(3, 'UTC')}) AND {b:DateTime64(3, 'UTC')}",
            parameters={"sites": sites, "a": start, "b": end},
        )
    )


def delete(client, sites: list[str], start: datetime, end: datetime, database: str = "sanlens") -> None:
    for table, column, period in TABLES:
        client.command(
            f"DELETE FROM {database}.{table} WHERE site IN {{sites:Array(String)}} AND {column} "
            f"BETWEEN toStartOfInterval({{a:DateTime64(3, 'UTC')}}, INTERVAL {period}) AND {{b:DateTime64(3, 'UTC')}}",
            parameters={"sites": sites, "a": start, "b": end},
        )
    days = [start.date() + timedelta(days=n) for n in range((end.date() - start.date()).days + 1)]
    rollups.replace_days(client, rollups.FLEET, days, database)

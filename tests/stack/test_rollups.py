"""The service-time rollups (ingest/loader/rollups.py) on the real ClickHouse: 10 s -> 1 min -> 1 h ->
1 day, 1 h per array, and 1 h per model and firmware for the whole fleet, keep every I/O exactly once, even
when a window is delivered twice or a refresh runs twice; each sample counts for the firmware its array ran
at the sample's time; late data is picked up."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

from ingest.loader import rollups, spans

# Yesterday's (an ended day: the day level takes it) and within the 10 s level's TTL of 7 days, which drops older
# rows as they are inserted.
YESTERDAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
T0 = YESTERDAY + timedelta(hours=10, minutes=59)
LEVELS = [f"sanlens.{level.table}" for level in rollups.LEVELS if level is not rollups.FLEET]  # per array
COLUMNS = [
    "window_start",
    "window_s",
    "sample_ts",
    "source",
    "site",
    "array",
    "volume",
    "host",
    "disk",
    "host_port",
    "direction",
    "bucket",
    "ios",
    "kafka_partition",
    "kafka_offset",
]


def window_rows(array: str, seconds: int, ios: int, offset: int) -> list[list]:
    ts = T0 + timedelta(seconds=seconds)
    start = ts - timedelta(seconds=ts.second % 10)
    return [
        [start, 10, ts, "array", "s1", array, f"{array}-v1", "", "", "", "write", b, ios, 0, offset + b] for b in (4, 5)
    ]


def totals(ch, array: str) -> dict:
    out = {}
    for table in LEVELS:
        rows = ch.query(
            f"SELECT firmware, sum(ios) FROM {table} FINAL WHERE array = {{a:String}} GROUP BY firmware",
            parameters={"a": array},
        ).result_rows
        out[table] = dict(rows)
    return out


def test_rollups_count_every_io_once_with_the_firmware_of_its_time(ch):
    array = f"roll-{uuid.uuid4().hex[:6]}"
    since = ch.command("SELECT now64(3)")
    ch.insert(
        "sanlens.topology",
        [
            [T0 - timedelta(days=1), "array", "c1", "s1", array, "M1", "ssd", "3.1.3"],
            [T0 + timedelta(seconds=45), "array", "c1", "s1", array, "M1", "ssd", "3.2.1"],
        ],
        column_names=["valid_from", "kind", "customer", "site", "array", "model", "media", "firmware"],
    )
    # samples at 10:59:10 and 10:59:40 (3.1.3), 10:59:50 and 11:00:20 (3.2.1): two minutes, two hours
    rows = [r for i, s in enumerate((10, 40, 50, 80)) for r in window_rows(array, s, 100 * (i + 1), 10 * i)]
    ch.insert("sanlens.service_time_hist_10s", rows, column_names=COLUMNS)
    assert rollups.refresh(ch, since)
    expected = {"3.1.3": 2 * (100 + 200), "3.2.1": 2 * (300 + 400)}
    assert totals(ch, array) == {t: expected for t in LEVELS}

    again = ch.command("SELECT now64(3)")
    ch.insert("sanlens.service_time_hist_10s", rows[:4], column_names=COLUMNS)  # a window delivered twice
    assert rollups.refresh(ch, again) and rollups.refresh(ch, again)  # and a refresh run twice
    assert totals(ch, array) == {t: expected for t in LEVELS}

    late = ch.command("SELECT now64(3)")
    ch.insert("sanlens.service_time_hist_10s", window_rows(array, 20, 7, 100), column_names=COLUMNS)  # late sample
    assert rollups.refresh(ch, late)
    expected["3.1.3"] += 14
    assert totals(ch, array) == {t: expected for t in LEVELS}
    minutes = ch.query(
        "SELECT period_start, sum(ios) FROM sanlens.service_time_hist_1m FINAL WHERE array = {a:String} "
        "GROUP BY period_start ORDER BY period_start",
        parameters={"a": array},
    ).result_rows
    assert [n for _, n in minutes] == [2 * (100 + 200 + 300 + 7), 2 * 400]


def test_the_fleet_level_sums_each_hour_over_arrays_and_replaces_whole_days(ch):
    """Two arrays of a model of this test's own, over midnight: the fleet level holds, per firmware, direction,
    hour and bucket, exactly the I/Os of the per-array level and how many arrays have them, one row each
    (read without FINAL), however often a window arrives or a refresh runs; a late sample is added, and a span
    replaced by another run (ingest/loader/spans.py) leaves nothing of the earlier one."""
    run = uuid.uuid4().hex[:6]
    model, site, a1, a2 = f"F-{run}", f"s-{run}", f"fleet-{run}-1", f"fleet-{run}-2"
    midnight = YESTERDAY
    since = ch.command("SELECT now64(3)")
    ch.insert(
        "sanlens.topology",
        [
            [midnight - timedelta(days=1), "array", "c1", site, a1, model, "ssd", "3.1.3"],
            [midnight - timedelta(days=1), "array", "c1", site, a2, model, "ssd", "3.1.3"],
            [midnight + timedelta(seconds=5), "array", "c1", site, a2, model, "ssd", "3.2.1"],
        ],
        column_names=["valid_from", "kind", "customer", "site", "array", "model", "media", "firmware"],
    )

    def rows(array: str, volume: str, seconds: int, ios: int, offset: int) -> list[list]:  # writes, buckets 4, 5
        ts = midnight + timedelta(seconds=seconds)
        start = ts - timedelta(seconds=ts.second % 10)
        return [
            [start, 10, ts, "array", site, array, volume, "", "", "", "write", b, ios, 0, offset + b] for b in (4, 5)
        ]

    # 23:59:50: both arrays on 3.1.3; 00:00:10: a1 (two volumes) still on 3.1.3, a2 on 3.2.1
    day1 = rows(a1, "v1", -10, 100, 0) + rows(a2, "v1", -10, 20, 10)
    day2 = rows(a1, "v1", 10, 3, 20) + rows(a1, "v2", 10, 5, 30) + rows(a2, "v1", 10, 40, 40)
    ch.insert("sanlens.service_time_hist_10s", day1 + day2, column_names=COLUMNS)
    assert rollups.refresh(ch, since)

    def fleet() -> dict:
        got = ch.query(
            "SELECT period_start, firmware, direction, bucket, ios, arrays FROM sanlens.service_time_hist_fleet_1h "
            "WHERE array_model = {m:String}",
            parameters={"m": model},
        ).result_rows
        out = {(p.replace(tzinfo=UTC), fw, d, b): (n, arrays) for p, fw, d, b, n, arrays in got}
        assert len(out) == len(got), "one row per key, without FINAL"
        return out

    hour1, hour2 = midnight - timedelta(hours=1), midnight
    expected = {
        **{(hour1, "3.1.3", "write", b): (120, 2) for b in (4, 5)},
        **{(hour2, "3.1.3", "write", b): (8, 1) for b in (4, 5)},
        **{(hour2, "3.2.1", "write", b): (40, 1) for b in (4, 5)},
    }
    assert fleet() == expected

    again = ch.command("SELECT now64(3)")
    ch.insert("sanlens.service_time_hist_10s", day1 + day2[:2], column_names=COLUMNS)  # delivered twice
    assert rollups.refresh(ch, again) and rollups.refresh(ch, again)  # and a refresh run twice
    assert fleet() == expected

    late = ch.command("SELECT now64(3)")
    ch.insert("sanlens.service_time_hist_10s", rows(a2, "v1", 20, 7, 100), column_names=COLUMNS)  # day 2 only
    assert rollups.refresh(ch, late)
    expected.update({(hour2, "3.2.1", "write", b): (47, 1) for b in (4, 5)})
    assert fleet() == expected

    spans.delete(ch, [site], midnight - timedelta(seconds=10), midnight + timedelta(seconds=30))
    assert fleet() == {}


def test_the_day_level_takes_a_day_once_it_has_ended(ch):
    """Live, the open day stays out of the day level (recomputing the whole day at every refresh would take
    the loader's time); the windows it left aside are taken at the first refresh after their day ended, even
    though they were loaded before that refresh's `since`."""
    array = f"day-{uuid.uuid4().hex[:6]}"
    if ch.command("SELECT toHour(now('UTC')) = 23 AND toMinute(now('UTC')) = 59"):
        time.sleep(61)  # not across midnight
    today = ch.query("SELECT toStartOfDay(now('UTC'))").first_row[0].replace(tzinfo=UTC)
    open_day, ended_day = today + timedelta(seconds=10), today - timedelta(hours=3)
    rows = [  # the ended day's window was loaded while its day was still open
        [start, 10, start, "array", "s1", array, f"{array}-v1", "", "", "", "read", 6, ios, loaded_at]
        for start, ios, loaded_at in ((open_day, 5, today), (ended_day, 7, today - timedelta(hours=2)))
    ]
    ch.insert("sanlens.service_time_hist_10s", rows, column_names=COLUMNS[:13] + ["loaded_at"])
    for level in rollups.LEVELS[:2]:  # the refresh after it was loaded: minutes and hours (the day was open)
        rollups.refresh_level(ch, level, since=today - timedelta(hours=2, seconds=1))
    assert rollups.refresh(ch, today - timedelta(seconds=30))  # the previous refresh ran before midnight
    day, this_hour = (
        ch.command(
            f"SELECT sum(ios) FROM sanlens.{table} FINAL WHERE array = {{a:String}} AND period_start >= {{p:DateTime}}",
            parameters={"a": array, "p": period},
        )
        for table, period in (("service_time_hist_1d", today - timedelta(days=1)), ("service_time_hist_1h", today))
    )
    assert (day, this_hour) == (7, 5)

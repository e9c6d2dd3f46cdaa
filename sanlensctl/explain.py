"""./sanlens explain HOST[:DISK]: where a host's I/O time goes, per path and direction, from the breakdown
job's windows (sanlens.path_latency): what the host measured, each part and its share, I/O-weighted; then
the incidents along its paths in the span (sanlens.path_incidents)."""

from __future__ import annotations

import difflib
import re
from datetime import UTC, datetime, timedelta

from sanlensctl import db
from sanlensctl.errors import SanlensError

PARTS = ("host_queueing", "fabric", "array", "unexplained")
DEFAULT_SPAN = timedelta(hours=1)

QUERY = f"""
SELECT w.disk AS disk, w.direction AS direction,
    concat(any(w.array), ':', any(w.volume)) AS volume,
    concat(any(w.switch), ' ', any(w.host_switch_port), ' > ', any(w.array_switch_port)) AS switch_ports,
    count() AS windows, sum(w.ios) AS ios, sum(w.host_us * w.ios) / sum(w.ios) AS measured_us,
    {", ".join(f"sum(w.{p}_us * w.ios) / sum(w.ios) AS {p}_us" for p in PARTS)}
FROM sanlens.path_latency AS w FINAL
WHERE w.host = {{host:String}} AND ({{disk:String}} = '' OR w.disk = {{disk:String}})
    AND w.window_start >= {{start:DateTime64(3)}} AND w.window_start < {{end:DateTime64(3)}}
GROUP BY disk, direction ORDER BY disk, direction
"""
INCIDENTS = """
SELECT path, contributor, component, started_at, ended_at, excess_us, severity
FROM sanlens.path_incidents FINAL
WHERE startsWith(path, concat({host:String}, ':', {disk:String}))
    AND started_at < {end:DateTime64(3)} AND (ended_at IS NULL OR ended_at > {start:DateTime64(3)})
ORDER BY started_at, path
"""
LAST_WINDOW = "SELECT max(window_start) + INTERVAL 10 SECOND FROM sanlens.path_latency WHERE host = {host:String}"
HOSTS = "SELECT DISTINCT host FROM sanlens.path_latency"

TIME_FORMATS = (
    "an ISO 8601 time (2026-11-27T16:13, an offset converted to UTC), a time of day (16:13), or -30m, -2h, -1d"
)
CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
RELATIVE = re.compile(r"-(\d+(?:\.\d+)?)([smhd])")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def checked_time(text: str) -> str:
    """`text` if `when` can read it (argparse's type for --from and --to), else the error naming what it reads."""
    try:
        when(text, datetime(2000, 1, 1))
    except ValueError:
        raise ValueError(f"{text!r} is not a time: give {TIME_FORMATS}") from None
    return text


def when(text: str, reference: datetime) -> datetime:
    """A time as naive UTC: ISO 8601; a time of day (UTC) on the reference's day, the day before when that is
    after the reference; or a span back from the reference (-30m). The reference is the end of the span: --to,
    else the host's last window."""
    text = text.strip()
    if m := RELATIVE.fullmatch(text):
        return reference - timedelta(**{UNITS[m[2]]: float(m[1])})
    if m := CLOCK.fullmatch(text):
        t = reference.replace(hour=int(m[1]), minute=int(m[2]), second=int(m[3] or 0), microsecond=0)
        return t - timedelta(days=1) if t > reference else t
    t = datetime.fromisoformat(text)
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


def nearest(host: str, known: list[str], n: int = 5) -> list[str]:
    """The known hosts whose names are nearest `host`'s (the first few in order when none is near)."""
    return difflib.get_close_matches(host, known, n=n, cutoff=0.3) or sorted(known)[:n]


def rows(host: str, disk: str, start: datetime, end: datetime) -> list[dict]:
    """One row per path and direction: measured_us, each part in µs, the largest part."""
    params = {"host": host, "disk": disk, "start": start, "end": end}
    out = list(db.client().query(QUERY, parameters=params).named_results())
    for row in out:
        row["largest"] = max(PARTS, key=lambda p: row[f"{p}_us"])
    return out


def incidents(host: str, disk: str, start: datetime, end: datetime) -> list[dict]:
    """The incidents in the span along the host's (or the disk's) paths."""
    params = {"host": host, "disk": disk, "start": start, "end": end}
    return list(db.client().query(INCIDENTS, parameters=params).named_results())


def span(host: str, start: str | None, end: str | None) -> tuple[datetime, datetime]:
    """The span asked for (`when`'s forms); by default the last hour of the host's data."""
    last = db.client().query(LAST_WINDOW, parameters={"host": host}).first_row[0]
    if last.year < 2000:  # max() of no rows
        known = [r[0] for r in db.client().query(HOSTS).result_rows]
        if not known:
            raise SanlensError("no host has a latency breakdown yet: run ./sanlens demo, or wait for the first windows")
        near = ", ".join(nearest(host, known))
        raise SanlensError(f"no latency breakdown for host {host}; the known hosts nearest it: {near}")
    last = last.astimezone(UTC).replace(tzinfo=None) if last.tzinfo else last
    stop = when(end, last) if end else last
    return (when(start, stop) if start else stop - DEFAULT_SPAN), stop


def table(found: list[dict]) -> tuple[list[str], list[list]]:
    """Columns and cells for print_rows: each part as 'µs (share of measured)'."""
    columns = ["disk", "direction", "volume", "switch ports", "windows", "ios", "measured us"]
    columns += [f"{p} us" for p in PARTS] + ["largest"]
    cells = []
    for r in found:
        parts = [f"{r[f'{p}_us']:.1f} ({r[f'{p}_us'] / r['measured_us']:.0%})" for p in PARTS]
        head = [r["disk"], r["direction"], r["volume"], r["switch_ports"], r["windows"], r["ios"]]
        cells.append([*head, f"{r['measured_us']:.1f}", *parts, r["largest"]])
    return columns, cells


def run(target: str, start: str | None, end: str | None) -> int:
    from sanlensctl.cli import print_rows

    host, _, disk = target.partition(":")
    disk = f"{disk}:" if disk and not disk.endswith(":") else disk  # D or D: both name the disk D:
    start, end = span(host, start, end)
    found = rows(host, disk, start, end)
    print(f"{target}: where the time goes from {start:%Y-%m-%d %H:%M:%S} to {end:%Y-%m-%d %H:%M:%S} UTC")
    if not found:
        print("no window of this host in the span (a window needs at least 100 I/Os in a direction)")
        return 1
    print_rows(*table(found))
    touched = incidents(host, disk, start, end)
    if not touched:
        print("\nno incident along these paths in the span")
        return 0
    print("\nincidents along these paths:")
    print_rows(
        ["path", "contributor", "component", "started", "ended", "excess us", "severity"],
        [
            [
                i["path"],
                i["contributor"],
                i["component"],
                f"{i['started_at']:%Y-%m-%d %H:%M:%S}",
                "open" if i["ended_at"] is None else f"{i['ended_at']:%H:%M:%S}",
                f"{i['excess_us']:.1f}",
                i["severity"],
            ]
            for i in touched
        ],
    )
    return 0

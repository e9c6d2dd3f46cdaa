"""./sanlens explain HOST[:DISK]: what happened on a host's paths, then where its I/O time went. First the incidents
along its paths in the span (sanlens.incidents: what, where, when, how much, how severe and why, the hosts, volumes
and arrays they touched); then, per path and direction, what the host measured and each part of it with its share,
I/O-weighted (the breakdown job's windows, sanlens.path_latency), during each incident and outside them, so that
a short incident is not averaged away by the hour around it. Beside them, the host's health: % Processor Time and
SQL Server's transactions/s over the same parts, and its HBA ports' queue depth against its fleet's setting
(queries/host_health.py); its paths as the inventory has them: each disk's volume, transport (FC or iSCSI) and MPIO
policy. The queries: queries/latency_breakdown.py, queries/incidents.py, queries/path_inventory.py."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from queries import incidents as incident_table
from queries import latency_breakdown, path_inventory
from sanlensctl import db, host_health
from sanlensctl.errors import SanlensError
from sanlensctl.output import print_rows

DEFAULT_SPAN = timedelta(hours=1)
PATH_HEAD = ["disk", "volume", "transport", "multipath policy", "HBA port", "since"]
TIME_FORMATS = (
    "an ISO 8601 time (2026-11-27T16:13, an offset converted to UTC), a time of day (16:13), or -30m, -2h, -1d"
)
CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
RELATIVE = re.compile(r"-(\d+(?:\.\d+)?)([smhd])")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
NO_WINDOW = "no window of this host in the span (a window needs at least 100 I/Os in a direction)"


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
    return naive_utc(datetime.fromisoformat(text))


def naive_utc(t: datetime) -> datetime:
    """`t` as naive UTC (an aware time converted; a naive one is taken as UTC already)."""
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


def nearest(host: str, known: list[str], n: int = 5) -> list[str]:
    """The known hosts whose names are nearest `host`'s (the first few in order when none is near)."""
    return difflib.get_close_matches(host, known, n=n, cutoff=0.3) or sorted(known)[:n]


@dataclass
class Segment:
    """A part of the span whose time is broken down on its own: an incident's time in the span, or the rest."""

    title: str
    start: datetime
    end: datetime
    left_out: list[tuple[datetime, datetime]]  # the incidents' times, whose windows are not this segment's


def incident_end(incident: dict, span_end: datetime) -> datetime:
    """Where an incident ends: its end, or the end of the span while it is open."""
    return naive_utc(incident["ended_at"]) if incident["ended_at"] is not None else span_end


def segments(found: list[dict], start: datetime, end: datetime) -> list[Segment]:
    """One segment per incident (numbered as listed), its time clipped to the span; then the span outside them."""
    clipped = [(max(naive_utc(i["started_at"]), start), min(incident_end(i, end), end)) for i in found]
    during = [
        Segment(f"during incident {n}, {describe(i)}", s, e, []) for n, (i, (s, e)) in enumerate(zip(found, clipped), 1)
    ]
    return [*during, Segment("outside the incidents" if found else "over the span", start, end, clipped)]


def describe(incident: dict) -> str:
    """An incident in a few words: its contributor on its component."""
    return f"{incident_table.CONTRIBUTOR[incident['contributor']]} on {incident['component']}"


def epoch(t: datetime) -> int:
    """A naive UTC time in seconds since the epoch."""
    return int(t.replace(tzinfo=UTC).timestamp())


def segment_params(segment: Segment) -> dict:
    """The segment as the queries take it: its span and the spans it leaves out."""
    return {
        "start": segment.start,
        "end": segment.end,
        "out_from": [epoch(s) for s, _ in segment.left_out],
        "out_to": [epoch(e) for _, e in segment.left_out],
    }


def rows(client, host: str, disk: str, segment: Segment) -> list[dict]:
    """One row per path and direction of the segment: measured_us, each part in µs, the largest part."""
    params = {"host": host, "disk": disk, **segment_params(segment)}
    out = list(client.query(latency_breakdown.PER_PATH, parameters=params).named_results())
    for row in out:
        row["largest"] = max(latency_breakdown.PARTS, key=lambda p: row[f"{p}_us"])
    return out


def incidents(client, host: str, disk: str, start: datetime, end: datetime) -> list[dict]:
    """The incidents in the span along the host's (or the disk's) paths."""
    params = {"prefix": f"{host}:{disk}:" if disk else f"{host}:", "start": start, "end": end}
    return list(client.query(incident_table.ALONG_PATHS, parameters=params).named_results())


def span(client, host: str, disk: str, start: str | None, end: str | None) -> tuple[datetime, datetime]:
    """The span asked for (`when`'s forms); by default the last hour of the host's data. An unknown host, an unknown
    disk or a span that ends before it starts is an error that says what is known."""
    last = client.query(latency_breakdown.LAST_WINDOW_END, parameters={"host": host}).first_row[0]
    if last.year < 2000:  # max() of no rows
        known = [r[0] for r in client.query(latency_breakdown.HOSTS).result_rows]
        if not known:
            raise SanlensError("no host has a latency breakdown yet: run ./sanlens demo, or wait for the first windows")
        near = ", ".join(nearest(host, known))
        raise SanlensError(f"no latency breakdown for host {host}; the known hosts nearest it: {near}")
    disks = [r[0] for r in client.query(latency_breakdown.DISKS, parameters={"host": host}).result_rows]
    if disk and disk not in disks:
        raise SanlensError(f"host {host} has no disk {disk} with a latency breakdown; its disks: {', '.join(disks)}")
    stop = when(end, naive_utc(last)) if end else naive_utc(last)
    begin = when(start, stop) if start else stop - DEFAULT_SPAN
    if begin >= stop:
        raise SanlensError(f"--from ({begin:%Y-%m-%d %H:%M:%S}) is not before --to ({stop:%Y-%m-%d %H:%M:%S})")
    return begin, stop


def table(found: list[dict]) -> tuple[list[str], list[list]]:
    """Columns and cells for print_rows: each part as 'µs (share of measured)'."""
    columns = ["disk", "direction", "volume", "switch ports", "windows", "ios", "measured us"]
    columns += [f"{p} us" for p in latency_breakdown.PARTS] + ["largest"]
    cells = []
    for r in found:
        parts = [f"{r[f'{p}_us']:.1f} ({r[f'{p}_us'] / r['measured_us']:.0%})" for p in latency_breakdown.PARTS]
        head = [r["disk"], r["direction"], r["volume"], r["switch_ports"], r["windows"], r["ios"]]
        cells.append([*head, f"{r['measured_us']:.1f}", *parts, r["largest"]])
    return columns, cells


def run(target: str, start: str | None, end: str | None) -> int:
    host, _, disk = target.partition(":")
    disk = f"{disk}:" if disk and not disk.endswith(":") else disk  # D or D: both name the disk D:
    client = db.reachable()
    start, end = span(client, host, disk, start, end)
    touched = incidents(client, host, disk, start, end)
    spans = segments(touched, start, end)
    parts = [(segment, rows(client, host, disk, segment)) for segment in spans]
    print(f"{target} from {start:%Y-%m-%d %H:%M:%S} to {incident_table.clock(end, start)} UTC")
    if not any(found for _, found in parts):
        print(NO_WINDOW)
        return 1
    show_incidents(touched)
    host_health.show(client, host, [(s.title, segment_params(s)) for s in spans])
    show_paths(client, host, disk, end)
    for segment, found in parts:
        clock = f"{incident_table.clock(segment.start, start)} to {incident_table.clock(segment.end, start)} UTC"
        print(f"\nwhere the time went {segment.title}, {clock}:")
        if found:
            print_rows(*table(found))
        else:
            print("no window in it")
    return 0


def show_paths(client, host: str, disk: str, at: datetime) -> None:
    """Each of the host's paths as the inventory had it at the span's end: how it reaches its volume and the MPIO
    policy it is load-balanced by."""
    params = {"host": host, "disk": disk, "at": at}
    found = list(client.query(path_inventory.AS_OF, parameters=params).named_results())
    print(f"\nits paths in the inventory at {at:%Y-%m-%d %H:%M:%S} UTC:")
    cells = [[r["disk"], r["volume"], r["transport"], r["multipath_policy"], r["host_port"], r["since"]] for r in found]
    print_rows(PATH_HEAD, cells)


def show_incidents(touched: list[dict]) -> None:
    """The incidents, numbered for the breakdowns during each, and what their severity means."""
    if not touched:
        print("\nno incident along its paths in the span")
        return
    print(f"\n{len(touched)} incident{'s' if len(touched) > 1 else ''} along its paths:")
    print_rows(["#", *incident_table.HEAD], [[n, *incident_table.cells(i)] for n, i in enumerate(touched, 1)])
    print(f"({incident_table.SEVERITY_RULE})")

"""Hostile and broken input against the live normalize job (Kafka -> normalize -> loader -> ClickHouse).

One batch of 10,000 records generated with hypothesis from a fixed seed (SANLENS_FUZZ_SEED=N or =random plays
another, to explore; every failure names the seed), mixed from valid records of every catalogued measurement
and hostile ones of each kind below, is produced once to telemetry.metrics, next to messages near and above the
broker's size limit, four steady sources, a source whose clock runs an hour ahead and one that floods. Then
every message must be refused at the edge (the broker's size limit, the producer's error), dead-lettered with a
reason of the documented set (flink-jobs/normalize/README.md, "Dead letters") and the one its kind calls for,
or out and counted, window by window; no sample is NaN, infinite, negative or from a refused record; the other
sources' samples and windows are what was sent; and the job never restarted.

A live stack cannot be called per hypothesis example: hypothesis generates the whole batch first (phase
generate only, no database), then it is produced in one go.
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.request
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as seeded
from hypothesis import strategies as st

from flink_jobs.normalize import catalog
from ingest import topics
from sanlensctl import config, procs
from sanlensctl.components import flink
from tests.support import settle

# The suite (and CI, through ./sanlens test) plays the same batch every time; SANLENS_FUZZ_SEED=N plays another,
# =random a new one each run (its failures name the seed to replay).
_seed = os.environ.get("SANLENS_FUZZ_SEED", "20261125")
SEED = random.randrange(2**32) if _seed == "random" else int(_seed)
GENERATED = 10_000
MEASUREMENTS = catalog.load()["measurements"]
OUT = frozenset()  # what a message that must come out expects: no dead letter
README = config.ROOT / "flink-jobs" / "normalize" / "README.md"
DROPS = {  # why a sample of a record that is out may be dropped (docs/contract.md)
    "baseline: first sample of a cumulative series",
    "counter reset",
    "duplicate",
    "out of order",
    "field not in catalog",
    "no I/O in interval",
    "no I/O in bucket",
    "non-finite value",
}
FUTURE, TOO_OLD, BAD_TS = "timestamp in the future", "timestamp too old", "bad timestamp"
INVALID_UTF8 = [
    b"\xff",
    b"\xc3\x28",
    b"\x80",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
    b"\xfe\xfe",
]


def documented_reasons() -> set[str]:
    """The dead-letter reasons of the job's README table: its rows start with | `reason` |."""
    section = README.read_text().split("## Dead letters", 1)[1]
    return {line.split("`")[1] for line in section.splitlines() if line.startswith("| `")}


@dataclass
class Message:
    kind: str
    value: bytes | None
    key: bytes | None
    expect: frozenset[str] = OUT  # the reasons it may be dead-lettered with; empty: it must come out
    site: str = ""  # the site of a record that comes out
    fields: int = 0  # ... and its fields: each is a sample in, out or dropped
    ts_ms: int | None = None  # the time its samples must carry (timestamps in s, ms, us, ns)
    host: str = ""
    edge: bool = False  # above the broker's size limit: the producer's error, never in the pipeline
    partition: int | None = None
    offset: int | None = None
    arrival_ms: int | None = None
    error: str | None = None


def dumps(record, ascii_only: bool = True) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


# -- the generated batch ---------------------------------------------------------------------------------
# Every strategy is built once, here: building one per draw cost hypothesis more than the drawing.
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-:./", min_size=1, max_size=10)
ANY_TEXT = st.text(max_size=12)
CONTROL = st.text(alphabet=[chr(c) for c in (*range(32), 127, 0x85, 0x2028)], min_size=1, max_size=4)


def _containers(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT, _containers, max_leaves=8
)
NOT_STRINGS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.lists(WORD, max_size=2)
NOT_NUMBERS = ANY_TEXT | st.booleans() | st.none() | st.lists(st.integers(), max_size=2) | st.just({"v": 1})
BINARY = st.binary(max_size=200) | st.binary(min_size=1, max_size=40).map(lambda b: b"{" + b + b"}")
ODD_KEY = st.none() | st.just(b"") | st.sampled_from(INVALID_UTF8) | st.binary(min_size=1, max_size=64)
ENTITY = st.sampled_from(["a", "b", "c"]) | WORD  # a few values, so that series come back
EXTRA_FIELDS = st.dictionaries(
    WORD.map(lambda w: f"x_{w}"), st.integers(-(10**6), 10**6) | st.floats(-1e6, 1e6), max_size=2
)
MEASUREMENT_NAMES = sorted(MEASUREMENTS)
PLAIN = [n for n in MEASUREMENT_NAMES if MEASUREMENTS[n]["by_tag"] is None]  # the catalogued fields are named
FIELDS = {
    n: st.lists(st.sampled_from(list(m["fields"].values())), min_size=1, max_size=5) for n, m in MEASUREMENTS.items()
}
VALUES = {
    (n, spec["source"]): (
        st.integers(0, int(spec["hi"])) | st.floats(0, spec["hi"])
        if spec["hi"] is not None
        else st.integers(0, 10**15) | st.floats(0, 1e15)
    )
    for n, m in MEASUREMENTS.items()
    for spec in m["fields"].values()
}
_INDEX: dict[int, st.SearchStrategy] = {}


def choose(draw, options: list):
    """One of `options`, drawn by its index (a strategy per length, built once)."""
    if (index := _INDEX.get(len(options))) is None:
        index = _INDEX[len(options)] = st.integers(0, len(options) - 1)
    return options[draw(index)]


class Batch:
    """The records of one run: its sites and sources are named after `run`, its times near `now_ms`. Each kind is
    a function of hypothesis' `draw` that returns a Message with what it expects."""

    def __init__(self, run: str, now_ms: int):
        self.run, self.now_ms = run, now_ms
        self.site_ok, self.site_bad, self.site_ts = f"{run}-ok", f"{run}-bad", f"{run}-ts"

    def key(self, draw) -> bytes:
        return f"{self.run}-k{choose(draw, range(8))}".encode()

    def record(self, draw, names: list[str] = MEASUREMENT_NAMES, site: str | None = None) -> dict:
        """A valid record as Telegraf or the simulator writes it, of a catalogued measurement."""
        name = choose(draw, names)
        m = MEASUREMENTS[name]
        tags = {"site": site or self.site_ok, "source": "fuzz", "objectname": draw(WORD)}
        for key, tag in m["entity"].items():
            if key != "site":
                tags[tag] = draw(ENTITY)
        fields = {}
        if m["by_tag"]:
            selector = choose(draw, [*m["fields"], "Logins/sec"])
            tags[m["by_tag"]] = selector
            spec = m["fields"].get(selector) or next(iter(m["fields"].values()))
            fields[spec["source"]] = draw(VALUES[(name, spec["source"])])
        else:
            for spec in draw(FIELDS[name]):
                fields[spec["source"]] = draw(VALUES[(name, spec["source"])])
                if spec["per"]:
                    fields.setdefault(spec["per"], draw(VALUES[(name, spec["per"])]))
        fields.update(draw(EXTRA_FIELDS))
        return {"name": name, "timestamp": self.now_ms - choose(draw, range(300_000)), "tags": tags, "fields": fields}

    def out(self, kind: str, record: dict, key: bytes | None, ascii_only: bool = True) -> Message:
        return Message(kind, dumps(record, ascii_only), key, site=record["tags"]["site"], fields=len(record["fields"]))

    def dead(self, kind: str, value: bytes | None, key: bytes | None, *reasons: str) -> Message:
        return Message(kind, value, key, frozenset(reasons))

    def valid(self, draw) -> Message:
        return self.out("valid", self.record(draw), self.key(draw), choose(draw, [True, False]))

    def timestamp_units(self, draw) -> Message:
        """Whole seconds (Telegraf's default), ms, us and ns: the size tells which, the sample keeps the ms."""
        seconds = self.now_ms // 1000 - choose(draw, range(300))
        unit = choose(draw, [1, 1000, 10**6, 10**9])
        ts = seconds * unit + (choose(draw, range(unit)) if unit >= 1000 else 0)
        record = {**self.record(draw, ["win_cpu"], self.site_ts), "timestamp": ts}
        record["tags"]["host"] = "@HOST@"  # one of its own, set once the batch is drawn
        message = self.out(f"timestamp x{unit}", record, self.key(draw))
        message.ts_ms = ts * 1000 // unit if unit <= 1000 else ts // (unit // 1000)
        return message

    def bad_timestamp(self, draw) -> Message:
        ms = self.now_ms - choose(draw, range(300_000))
        ts, reason = choose(
            draw,
            [
                (ms * 10, FUTURE),  # no unit puts these near now
                (ms // 10, TOO_OLD),
                (ms * 100, TOO_OLD),
                (ms // 100, FUTURE),
                (ms * 10**7, BAD_TS),  # beyond a 64-bit integer
                (ms + 3_600_000, FUTURE),
                (ms - 40 * 86_400_000, TOO_OLD),
                (0, TOO_OLD),
                (-ms, TOO_OLD),
                (ms / 1000, BAD_TS),  # seconds with a fraction
                (float(ms), BAD_TS),
                (str(ms), BAD_TS),
                (True, BAD_TS),
                ([ms], BAD_TS),
                (None, "missing field"),
            ],
        )
        record = {**self.record(draw, site=self.site_bad), "timestamp": ts}
        return self.dead("bad timestamp", dumps(record), self.key(draw), reason)

    def random_json(self, draw) -> Message:
        value = draw(JSON_VALUES)
        if isinstance(value, dict):
            value.pop("name", None)
            return self.dead("random JSON", dumps(value), self.key(draw), "missing field")
        return self.dead("random JSON", dumps(value), self.key(draw), "not a JSON object")

    def random_bytes(self, draw) -> Message:
        reasons = ("not JSON", "not a JSON object", "empty message", "missing field", "duplicate key")
        return self.dead("random bytes", draw(BINARY), draw(ODD_KEY), *reasons)

    def invalid_utf8(self, draw) -> Message:
        """Bytes that are not UTF-8 in a tag, a field's name or the measurement's name."""
        record = self.record(draw)
        where = choose(draw, ["tag", "field", "name"])
        if where == "tag":
            record["tags"]["objectname"] = "@BAD@"
        elif where == "field":
            record["fields"]["x_@BAD@"] = 1
        else:
            record["name"] += "@BAD@"
        message = self.out(f"invalid UTF-8 in a {where}", record, self.key(draw))
        message.value = message.value.replace(b"@BAD@", choose(draw, INVALID_UTF8))
        if where == "name":
            message.expect = frozenset({"unknown measurement"})
        return message

    def wrong_type_tag(self, draw) -> Message:
        record = self.record(draw, site=self.site_bad)
        record["tags"][choose(draw, sorted(record["tags"]))] = draw(NOT_STRINGS)
        return self.dead("tag not a string", dumps(record), self.key(draw), "bad tag")

    def wrong_type_field(self, draw) -> Message:
        """A catalogued field that is not a number: refused. A field the catalog does not know: dropped."""
        record = self.record(draw, PLAIN)
        field = choose(draw, [*sorted(record["fields"]), "x_odd"])
        record["fields"][field] = draw(NOT_NUMBERS)
        if field.startswith("x_"):
            return self.out("unknown field not a number", record, self.key(draw))
        record["tags"]["site"] = self.site_bad
        return self.dead("field not a number", dumps(record), self.key(draw), "non-numeric value")

    def deeply_nested(self, draw) -> Message:
        depth = choose(draw, [choose(draw, range(2, 900)), choose(draw, range(999, 5000))])
        opening, closing = choose(draw, [("[", "]"), ('{"a":', "}")])
        where = choose(draw, ["unknown field", "catalogued field", "tag"])
        record = self.record(draw, PLAIN)
        if where == "unknown field":
            record["fields"]["x_deep"] = "@DEEP@"
            message = self.out("deeply nested", record, self.key(draw))
        else:
            record["tags"]["site"] = self.site_bad
            if where == "tag":
                record["tags"]["objectname"] = "@DEEP@"
            else:
                record["fields"][next(k for k in record["fields"] if not k.startswith("x_"))] = "@DEEP@"
            message = self.dead("deeply nested", dumps(record), self.key(draw))
            message.expect = frozenset({"bad tag" if where == "tag" else "non-numeric value"})
        message.value = message.value.replace(b'"@DEEP@"', (opening * depth + "0" + closing * depth).encode())
        if depth >= 999:  # with the record and its fields object, beyond the parser's 1,000 levels
            message.expect = frozenset({"not JSON"})
        message.kind = f"deeply nested in a {where}" + (" beyond 1,000 levels" if depth >= 999 else "")
        return message

    def huge(self, draw) -> Message:
        size = choose(draw, range(10_000, 100_000))
        record = self.record(draw)
        if choose(draw, [True, False]):
            record["fields"]["x_huge"] = choose(draw, ["a", "\u00e9", "\\", '"', "\x01"]) * size
            return self.out("huge field", record, self.key(draw))
        record["tags"]["site"] = self.site_bad
        record["tags"][choose(draw, ["host", "objectname"])] = choose(draw, ["a", "\x01"]) * size
        return self.dead("huge tag", dumps(record), self.key(draw), "bad tag")

    def many_fields(self, draw) -> Message:
        record = self.record(draw)
        record["fields"].update({f"x{i}": i for i in range(choose(draw, range(1_000, 5_000)))})
        return self.out("thousands of fields", record, self.key(draw))

    def duplicate_keys(self, draw) -> Message:
        record = self.record(draw, site=self.site_bad)
        where = choose(draw, ["fields", "tags", "top"])
        inner = record if where == "top" else record[where]
        name = choose(draw, sorted(inner))
        pairs = ",".join(json.dumps(k) + ":" + dumps(v).decode() for k, v in inner.items())
        again = json.dumps(name) + ":" + dumps(choose(draw, [inner[name], 7, "x"])).decode()
        doubled = f"{{{pairs},{again}}}".encode()
        value = doubled if where == "top" else dumps(record).replace(f"{{{pairs}}}".encode(), doubled, 1)
        return self.dead(f"duplicate key in {where}", value, self.key(draw), "duplicate key")

    def control_characters(self, draw) -> Message:
        record, key, text = self.record(draw), self.key(draw), draw(CONTROL)
        where = choose(draw, ["name", "tag key", "tag value", "entity", "field name", "key"])
        if where == "name":
            record["name"] = text + record["name"]
            return self.dead("control characters in the name", dumps(record), key, "unknown measurement")
        if where == "tag key":
            record["tags"]["obj" + text] = "x"
        elif where == "tag value":
            record["tags"]["objectname"] = text
        elif where == "entity":
            record["tags"]["host"] = "h" + text
        elif where == "field name":
            record["fields"]["x" + text] = 1
        else:
            key += text.encode()
        return self.out(f"control characters in a {where}", record, key, choose(draw, [True, False]))

    def bad_number(self, draw) -> Message:
        record = self.record(draw, PLAIN, self.site_bad)
        for field in [k for k in record["fields"] if not k.startswith("x_")]:
            del record["fields"][field]
        spec = choose(draw, list(MEASUREMENTS[record["name"]]["fields"].values()))
        hi = spec["hi"] if spec["hi"] is not None else 2.0**64
        token, reason = choose(
            draw,
            [
                ("NaN", "non-finite value"),
                ("Infinity", "non-finite value"),
                ("-Infinity", "non-finite value"),
                ("9" * 400, "non-finite value"),
                ("-1", "negative value"),
                ("-1e-300", "negative value"),
                (repr(hi * 1.5), "beyond physical bounds"),
                ("1e308", "beyond physical bounds"),
            ],
        )
        record["fields"][spec["source"]] = "@NUM@"
        if spec["per"]:
            record["fields"][spec["per"]] = 1
        value = dumps(record).replace(b'"@NUM@"', token.encode())
        return self.dead(f"{reason}: {token[:12]}", value, self.key(draw), reason)

    def broken_record(self, draw) -> Message:
        record = self.record(draw, site=self.site_bad)
        what = choose(draw, ["missing", "fields", "tags", "name", "empty"])
        if what == "missing":
            del record[choose(draw, ["name", "timestamp", "fields", "tags"])]
        elif what == "fields":
            record["fields"] = choose(draw, [[], {}, "x", 5, [1, 2]])
        elif what == "tags":
            record["tags"] = choose(draw, [[], "x", 5, None])
        elif what == "name":
            record["name"] = choose(draw, [5, "win_toaster", "", ["win_disk"], {"a": 1}])
            return self.dead("broken name", dumps(record), self.key(draw), "unknown measurement")
        else:
            return self.dead("empty", choose(draw, [b"", b"  \n\t ", None]), self.key(draw), "empty message")
        return self.dead(f"broken {what}", dumps(record), self.key(draw), "missing field")

    def odd_key(self, draw) -> Message:
        return self.out("odd Kafka key", self.record(draw), draw(ODD_KEY))

    KINDS = {  # how many of each kind in every hundred records
        valid: 34,
        timestamp_units: 8,
        bad_timestamp: 7,
        random_json: 6,
        random_bytes: 6,
        invalid_utf8: 5,
        wrong_type_tag: 4,
        wrong_type_field: 5,
        deeply_nested: 4,
        huge: 1,
        many_fields: 1,
        duplicate_keys: 4,
        control_characters: 6,
        bad_number: 5,
        broken_record: 3,
        odd_key: 1,
    }
    HUNDRED = [kind for kind, n in KINDS.items() for _ in range(n)]
    assert len(HUNDRED) == 100


def generate(batch: Batch, n: int, seed: int) -> list[Message]:
    """`n` messages drawn from `batch`, the same ones for the same seed (and hypothesis version): a hundred, of
    each kind as many as Batch.KINDS says, from each of as many hypothesis examples as it takes (an example costs
    hypothesis far more than a draw)."""
    found = []

    @seeded(seed)
    @settings(
        max_examples=-(-n // 100),
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def collect(data):
        found.extend(kind(batch, data.draw) for kind in batch.HUNDRED)

    collect()
    return found


# -- the sources beside the batch ---------------------------------------------------------------------------
def steady(run: str, now_ms: int, n: int = 4, steps: int = 25) -> list[Message]:
    """Sources that behave: a Perfmon disk (gauges) and an HBA port (a counter) every 10 s for 250 s."""
    out = []
    for s in range(n):
        site, host = f"{run}-steady{s}", f"{run}-steady{s}-h"
        for i in range(steps):
            ts = now_ms - 300_000 + i * 10_000
            tags = {"host": host, "site": site, "source": host}
            for name, extra, fields in (
                ("win_disk", {"instance": "D:"}, {"Avg._Disk_sec/Read": 0.001 * (s + 1), "Disk_Reads_persec": 100 + i}),
                ("hba_port", {"port": "p0"}, {"frames": 1_000 * i * i, "queue_depth": 32}),
            ):
                record = {"name": name, "timestamp": ts, "tags": {**tags, **extra}, "fields": fields}
                out.append(Message("steady source", dumps(record), host.encode(), site=site, fields=len(fields)))
    return out


def expected_steady(messages: list[Message]) -> set[tuple]:
    """(site, metric, ts, value) of the steady sources' samples: gauges as sent times their scale, counters as
    their rate between consecutive samples."""
    expected, previous = set(), {}
    for m in messages:
        record = json.loads(m.value)
        spec_of = {f["source"]: f for f in MEASUREMENTS[record["name"]]["fields"].values()}
        for field, value in record["fields"].items():
            spec, ts, series = spec_of[field], record["timestamp"], (m.site, record["name"], field)
            if spec["kind"] == "gauge":
                expected.add((m.site, spec["metric"], ts, round(value * spec["scale"], 6)))
            elif series in previous:
                t0, v0 = previous[series]
                expected.add((m.site, spec["metric"], ts, round((value - v0) * spec["scale"] * 1000 / (ts - t0), 6)))
            previous[series] = ts, value
    return expected


def one_source(run: str, name: str, stamps: list[int], fields, expect: frozenset[str] = OUT) -> list[Message]:
    """A Perfmon disk of its own source and site ({run}-{name}): a record at each of `stamps`, the i-th with the
    fields `fields(i)`."""
    key, site = f"{run}-{name}".encode(), f"{run}-{name}"
    tags = {"host": site, "site": site, "instance": "D:"}
    return [
        Message(
            name,
            dumps({"name": "win_disk", "timestamp": ts, "tags": tags, "fields": fields(i)}),
            key,
            expect,
            site="" if expect else site,
            fields=0 if expect else len(fields(i)),
        )
        for i, ts in enumerate(stamps)
    ]


def ahead(run: str, now_ms: int, n: int = 50) -> list[Message]:
    """A source whose clock runs an hour ahead: every record refused, nobody else's windows moved."""
    stamps = [now_ms + 3_600_000 + i * 1_000 for i in range(n)]
    return one_source(run, "ahead", stamps, lambda i: {"Disk_Reads_persec": i}, frozenset({FUTURE}))


def flood(run: str, now_ms: int, n: int = 3_000) -> list[Message]:
    """A source that floods: `n` records in one burst, each a sample of its own millisecond."""
    stamps = [now_ms - 200_000 + i for i in range(n)]
    return one_source(run, "flood", stamps, lambda i: {"Disk_Reads_persec": i % 1000, "Current_Disk_Queue_Length": 1})


def tiny_counts(run: str, now_ms: int) -> list[Message]:
    """A DMV file whose reads move by the smallest doubles: its stall per read overflows a double."""
    site = f"{run}-tiny"
    tags = {"host": site, "site": site, "sql_instance": "i", "database_name": "d", "logical_filename": "f"}
    return [
        Message(
            "tiny count steps",
            dumps(
                {
                    "name": "sqlserver_database_io",
                    "timestamp": now_ms - 60_000 + i * 10_000,
                    "tags": tags,
                    "fields": {"reads": reads, "read_latency_ms": stall},
                }
            ),
            site.encode(),
            site=site,
            fields=2,
        )
        for i, (reads, stall) in enumerate([(0, 0), (5e-324, 1), (1e-300, 1e10), (2e-300, 1e15)])
    ]


def near_the_limit(run: str, now_ms: int, limit: int) -> list[Message]:
    """Messages just under the broker's size limit, out or dead-lettered whole, and over it: the producer's
    error. `limit` is the topic's max.message.bytes, which a record batch's header and the record's framing
    (under 100 bytes) count in. Their JSON escapes (of quotes, backslashes, control characters) or raw control
    bytes grow as a dead letter escapes its payload again, up to six times; a key near the limit goes into each
    of its record's samples."""
    key = f"{run}-big".encode()
    under = limit - 300

    def padded(name: str, site: str, filler: str, size: int = under, **fields) -> bytes:
        tags = {"host": f"{run}-big", "site": site, "instance": "D:"}
        record = {"name": name, "timestamp": now_ms - 1_000, "tags": tags, "fields": fields}
        record["fields"]["x_pad"] = ""
        room = size - len(key) - len(dumps(record))
        record["fields"]["x_pad"] = filler * (room // (len(json.dumps(filler)) - 2))
        return dumps(record)

    ok, bad = f"{run}-ok", f"{run}-bad"
    small = dumps(
        {
            "name": "win_cpu",
            "timestamp": now_ms - 1_000,
            "tags": {"host": f"{run}-bk", "site": ok},
            "fields": {"Percent_Processor_Time": 5},
        }
    )
    messages = [
        *(
            Message("near the limit", padded("win_disk", ok, c, Disk_Reads_persec=1), key, site=ok, fields=2)
            for c in ("a", "\x01", '"')
        ),
        Message(
            "near the limit, refused", padded("win_toaster", bad, '"', a=1), key, frozenset({"unknown measurement"})
        ),
        Message(
            "near the limit, refused",
            padded("win_disk", bad, "\\", Disk_Reads_persec=-1),
            key,
            frozenset({"negative value"}),
        ),
        Message("near the limit, refused", b"\x01" * under, key, frozenset({"not JSON"})),
        Message(
            "near the limit, refused",
            b'"' + b"\\u0001" * (under // 6 - 1) + b'"',
            key,
            frozenset({"not a JSON object"}),
        ),
        Message("near the limit, key", small, b"k" * (under - len(small)), frozenset({"bad key"})),
    ]
    for size in (limit + 100, limit + 100_000, 3 * limit):
        messages.append(
            Message("over the limit", padded("win_disk", ok, "a", size, Disk_Reads_persec=1), key, edge=True)
        )
    return messages


def interleave(base: list, ordered: list, rng: random.Random) -> list:
    """`ordered` spread over `base` at random places, keeping its own order."""
    places = set(rng.sample(range(len(base) + len(ordered)), len(ordered)))
    base_it, ordered_it = iter(base), iter(ordered)
    return [next(ordered_it) if i in places else next(base_it) for i in range(len(base) + len(ordered))]


# -- the run against the stack ------------------------------------------------------------------------------
def max_message_bytes() -> int:
    """The broker's size limit for telemetry.metrics (the topic's max.message.bytes)."""
    admin = AdminClient({**config.kafka_client(), "log_level": 0})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topics.METRICS)
    return int(admin.describe_configs([resource])[resource].result(30)["max.message.bytes"].value)


def normalize_job() -> dict:
    """The normalize job as its Flink REST API and the stack's pid file see it."""
    base = f"http://127.0.0.1:{config.FLINK_REST_PORT + flink.JOBS.index('normalize')}"

    def get(path: str):
        with urllib.request.urlopen(base + path, timeout=10) as resp:
            return json.load(resp)

    job = max(get("/jobs/overview")["jobs"], key=lambda j: j["start-time"])
    details = get(f"/jobs/{job['jid']}")
    exceptions = get(f"/jobs/{job['jid']}/exceptions").get("exceptionHistory", {}).get("entries", [])
    return {
        "pid": procs.recorded_pid("flink-normalize"),
        "jid": job["jid"],
        "state": job["state"],
        "start-time": job["start-time"],
        "restarting": details["timestamps"].get("RESTARTING", 0),
        "failing": details["timestamps"].get("FAILING", 0),
        "exceptions": [e.get("exceptionName", "") + ": " + e.get("stacktrace", "")[:400] for e in exceptions],
    }


def produce(messages: list[Message], limit: int) -> None:
    """Every message in one go; each one's partition, offset and arrival (the broker's append time) or error.
    The producer lets through what the broker may refuse, so that the broker's limit is the edge."""
    producer = Producer(
        {
            **config.kafka_client(),
            "linger.ms": 20,
            "message.max.bytes": 4 * limit,
            "batch.size": limit // 2,  # a batch of small messages never exceeds the limit itself
            "log_level": 0,
        }
    )

    def report(err, msg, m: Message) -> None:
        if err is not None:
            m.error = err.name()
        else:
            m.partition, m.offset, m.arrival_ms = msg.partition(), msg.offset(), msg.timestamp()[1]

    for m in messages:
        producer.produce(topics.METRICS, m.value, m.key, on_delivery=lambda err, msg, m=m: report(err, msg, m))
        producer.poll(0)
    assert producer.flush(120) == 0


@dataclass
class Run:
    run: str
    messages: list[Message]
    generated: int
    dead: dict  # (partition, offset) -> (reason, detail) of this run's dead letters
    accounting: list  # (site, window start s, unit, outcome, reason, records) of this run's sites
    job_before: dict
    job_after: dict

    @property
    def delivered(self) -> list[Message]:
        return [m for m in self.messages if m.error is None]

    def explain(self, what: str) -> str:
        return f"{what} (SANLENS_FUZZ_SEED={SEED}, run {self.run})"


@pytest.fixture(scope="module")
def fuzzed(stack, ch) -> Run:
    return fuzz(ch)


def fuzz(ch) -> Run:
    """The batch and the other sources produced once, and what became of each message once the job and the loader
    are done with them."""
    run, now_ms = f"fz{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    batch = Batch(run, now_ms)
    generated = generate(batch, GENERATED, SEED)
    for i, m in enumerate(generated):
        if m.value and b"@HOST@" in m.value:
            m.host = f"{run}-t{i}"
            m.value = m.value.replace(b"@HOST@", m.host.encode())
    limit, rng = max_message_bytes(), random.Random(SEED)
    others = generated + ahead(run, now_ms) + near_the_limit(run, now_ms, limit)
    rng.shuffle(others)
    messages = interleave(others, steady(run, now_ms) + tiny_counts(run, now_ms), rng)
    messages[len(messages) // 2 : len(messages) // 2] = flood(run, now_ms)
    job_before = normalize_job()
    since = ch.command("SELECT now64(3) - INTERVAL 1 MINUTE")
    produce(messages, limit)
    delivered = {(m.partition, m.offset) for m in messages if m.error is None}
    fields = sum(m.fields for m in messages if m.error is None and not m.expect)  # the samples in, if all goes well

    def read():
        dead = {
            (p, o): (reason, detail)
            for p, o, reason, detail in ch.query(
                "SELECT partition, offset, reason, detail FROM sanlens.deadletter WHERE stage = 'normalize' "
                "AND topic = {t:String} AND ts >= {s:DateTime64(3)}",
                parameters={"t": topics.METRICS, "s": since},
            ).result_rows
            if (p, o) in delivered
        }
        accounting = ch.query(
            "SELECT site, toUnixTimestamp(window_start), unit, outcome, reason, sum(records) "
            "FROM sanlens.pipeline_accounting WHERE stage = 'normalize' AND startsWith(site, {r:String}) GROUP BY ALL",
            parameters={"r": run},
        ).result_rows
        totals = Counter()
        for _, _, unit, outcome, _, n in accounting:
            totals[(unit, outcome)] += n
        samples = (totals[("samples", "in")], totals[("samples", "out")] + totals[("samples", "dropped")])
        done = len(dead) + totals[("records", "in")] == len(delivered) and samples == (fields, fields)
        return done, (dead, sorted(accounting))

    dead, accounting = settle(read, 300, quiet=60)
    out = sum(n for site, _, unit, outcome, _, n in accounting if (unit, outcome) == ("samples", "out"))
    settle(lambda: ((n := count(ch, "site LIKE {r:String}", r=f"{run}-%")) == out, n), 120, quiet=60)
    return Run(run, messages, len(generated), dead, accounting, job_before, normalize_job())


def count(ch, where: str, **parameters) -> int:
    return ch.command(f"SELECT count() FROM sanlens.metrics WHERE {where}", parameters=parameters)


def test_the_batch_is_large_and_has_every_kind(fuzzed):
    kinds = Counter(m.kind.split(":")[0] for m in fuzzed.messages)
    assert fuzzed.generated >= GENERATED, fuzzed.explain(f"only {fuzzed.generated} records generated")
    for kind in (
        "valid",
        "random JSON",
        "random bytes",
        "tag not a string",
        "field not a number",
        "flood",
        "huge tag",
        "thousands of fields",
        "duplicate key in fields",
        "invalid UTF-8 in a tag",
        "timestamp x1",
        "timestamp x1000000000",
        "bad timestamp",
        "non-finite value",
        "ahead",
    ):
        assert kinds[kind] > 0, fuzzed.explain(f"no {kind} record in {dict(kinds)}")


def test_messages_over_the_broker_s_limit_are_refused_at_the_producer_and_those_under_it_go_through(fuzzed):
    refused = [(m.kind, len(m.value), m.error) for m in fuzzed.messages if m.error is not None]
    assert refused == [(m.kind, len(m.value), "MSG_SIZE_TOO_LARGE") for m in fuzzed.messages if m.edge]
    assert len(refused) == 3


def test_the_normalize_job_never_restarted(fuzzed):
    """The same process and job, running, with no failure since the batch was produced (Flink's exception history
    and the last times it was failing or restarting)."""
    before, after = fuzzed.job_before, fuzzed.job_after
    assert after["exceptions"] == before["exceptions"], fuzzed.explain("the job failed")
    assert {k: after[k] for k in before if k != "state"} == {k: before[k] for k in before if k != "state"}
    assert after["state"] == "RUNNING"


def test_each_message_is_dead_lettered_with_the_reason_of_its_kind_or_comes_out(fuzzed):
    documented, wrong = documented_reasons(), defaultdict(list)
    for m in fuzzed.delivered:
        reason, detail = fuzzed.dead.get((m.partition, m.offset), ("", ""))
        if (reason in m.expect) if m.expect else not reason:
            assert reason in documented or not reason, f"dead-letter reason {reason!r} is not in {README}"
            continue
        payload = m.value[:120] if m.value is not None else None
        wrong[m.kind].append(
            f"expected {sorted(m.expect) or 'out'}, got {reason or 'out'} {detail[:80]!r}: {payload!r}"
        )
    assert not wrong, fuzzed.explain(
        "\n".join(f"{kind}: {len(cases)} wrong, e.g. {cases[0]}" for kind, cases in sorted(wrong.items()))
    )


def test_every_record_and_sample_is_counted_in_the_window_it_arrived_in(fuzzed):
    """Per site and 10 s window of arrival: records in = out = what was sent there and came out; samples in =
    the fields those records had = out + dropped, each drop with a reason of the contract."""
    sent, fields = Counter(), Counter()
    for m in fuzzed.delivered:
        if not m.expect:
            window = m.arrival_ms // 1000 - m.arrival_ms // 1000 % 10
            sent[(m.site, window)] += 1
            fields[m.site] += m.fields
    counted, samples = defaultdict(Counter), defaultdict(Counter)
    for site, window, unit, outcome, reason, n in fuzzed.accounting:
        if unit == "records":
            counted[outcome][(site, window)] += n
        else:
            samples[site][outcome if outcome != "dropped" else reason] += n
    assert counted["deadletter"] == Counter(), fuzzed.explain("dead letters counted under a site")
    assert counted["in"] == counted["out"] == sent, fuzzed.explain("records in, out and sent differ")
    # every message the broker took is in: out under its site, or dead-lettered (counted under none)
    assert sum(counted["in"].values()) + len(fuzzed.dead) == len(fuzzed.delivered) == len(fuzzed.messages) - 3
    for site in fields:
        dropped = {r: n for r, n in samples[site].items() if r not in ("in", "out")}
        assert set(dropped) <= DROPS, dropped
        assert samples[site]["in"] == fields[site] == samples[site]["out"] + sum(dropped.values()), site


def test_dead_letters_are_counted_in_their_windows(fuzzed, ch):
    """A dead letter is counted under no site (its record's tags were not read): in each window this run's dead
    letters arrived in, the accounting's dead letters are the dead letters the table holds, every source's."""
    windows = sorted({m.arrival_ms // 10_000 * 10 for m in fuzzed.delivered if (m.partition, m.offset) in fuzzed.dead})
    query = (
        "SELECT (SELECT sum(records) FROM sanlens.pipeline_accounting WHERE stage = 'normalize' AND site = '' AND "
        "unit = 'records' AND outcome = 'deadletter' AND toUnixTimestamp(window_start) IN {w:Array(Int64)}), "
        "(SELECT count() FROM sanlens.deadletter WHERE stage = 'normalize' AND "
        "toUnixTimestamp(toStartOfInterval(ts, INTERVAL 10 SECOND)) IN {w:Array(Int64)})"
    )
    counted, held = settle(lambda: ((r := ch.query(query, parameters={"w": windows}).first_row)[0] == r[1], r), 60)
    assert counted == held >= len(fuzzed.dead) > 0


def test_no_sample_is_nan_infinite_negative_or_from_a_refused_record(fuzzed, ch):
    odd = ch.query(
        "SELECT metric, value, site FROM sanlens.metrics WHERE site LIKE {r:String} "
        "AND (isNaN(value) OR isInfinite(value) OR value < 0) LIMIT 5",
        parameters={"r": f"{fuzzed.run}-%"},
    ).result_rows
    assert odd == []
    refused = [f"{fuzzed.run}-bad", f"{fuzzed.run}-ahead"]
    assert count(ch, "site IN {s:Array(String)}", s=refused) == 0
    assert (
        ch.command(
            "SELECT count() FROM sanlens.deadletter WHERE stage = 'loader' AND position(payload, {r:String}) > 0",
            parameters={"r": fuzzed.run},
        )
        == 0
    )


def test_timestamps_in_seconds_us_and_ns_keep_their_time(fuzzed, ch):
    sent = {m.host: m.ts_ms for m in fuzzed.delivered if m.ts_ms is not None}
    got = dict(
        ch.query(
            "SELECT host, toUnixTimestamp64Milli(ts) FROM sanlens.metrics WHERE site = {s:String} "
            "AND metric = 'host.cpu_busy'",
            parameters={"s": f"{fuzzed.run}-ts"},
        ).result_rows
    )
    units = Counter(m.kind for m in fuzzed.delivered if m.ts_ms is not None)
    assert got == sent and len(units) == 4, units


def test_a_clock_an_hour_ahead_and_a_flood_leave_the_steady_sources_alone(fuzzed, ch):
    steady_messages = [m for m in fuzzed.messages if m.kind == "steady source"]
    got = {
        (site, metric, ts, round(value, 6))
        for site, metric, ts, value in ch.query(
            "SELECT site, metric, toUnixTimestamp64Milli(ts), value FROM sanlens.metrics WHERE site LIKE {s:String}",
            parameters={"s": f"{fuzzed.run}-steady%"},
        ).result_rows
    }
    assert got == expected_steady(steady_messages)
    assert count(ch, "site = {s:String}", s=f"{fuzzed.run}-flood") == 3_000 * 2


# -- malformed answers from the arrays' and switches' APIs, through the real Telegraf -------------------------

"""Decoding one raw Telegraf JSON record into typed samples, against catalog.yaml.

Pure Python and stateless: the job calls it as a table function (SQL cannot walk a JSON object's
keys); everything stateful (deltas, resets, duplicates) happens in Flink SQL afterwards.

A record is either refused as a whole (outcome DEAD, with a reason and a detail for the dead-letter
topic) or DECODED into one sample per catalogued field, plus the names of the fields the catalog
does not know (counted as dropped samples).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CATALOG_FILE = Path(__file__).resolve().parent / "catalog.yaml"
ENTITY_KEYS = [
    "site",
    "host",
    "disk",
    "sql_instance",
    "database",
    "file",
    "array",
    "volume",
    "host_port",
    "switch",
    "port",
]
DECODED, DEAD = "decoded", "dead"


@dataclass(frozen=True)
class Sample:
    metric: str
    kind: str  # gauge | counter | ratio | histogram
    unit: str
    bucket: int  # 0..31 for histograms, else -1
    num: float  # the value, scaled
    den: float | None  # ratio: the count it is divided by


@dataclass
class Decoded:
    outcome: str
    reason: str = ""
    detail: str = ""
    series: str = ""
    ts_ms: int = 0
    entity: list[str] = field(default_factory=lambda: [""] * len(ENTITY_KEYS))
    samples: list[Sample] = field(default_factory=list)
    unknown_fields: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Field:
    source: str  # the field's name in the record
    metric: str
    kind: str  # gauge | counter | ratio | histogram
    unit: str
    scale: float
    lo: float
    hi: float
    per: str | None  # ratio: the field it is divided by
    bucket: int


class Refused(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def load_catalog(path: Path = CATALOG_FILE) -> dict:
    raw = yaml.safe_load(path.read_text())
    measurements = {}
    for name, spec in raw["measurements"].items():
        fields: dict[str, Field] = {}
        for key, f in spec["fields"].items():
            for n in range(spec.get("buckets", 1)) if "{n}" in key else [-1]:
                source = f.get("field", key.replace("{n}", str(n)))
                fields[key.replace("{n}", str(n))] = Field(
                    source,
                    f["metric"],
                    f["kind"],
                    f["unit"],
                    float(f.get("scale", 1)),
                    float(f.get("min", 0)),
                    float(f.get("max", math.inf)),
                    f.get("per"),
                    n,
                )
        measurements[name] = {"entity": spec["entity"], "by_tag": spec.get("by_tag"), "fields": fields}
    return {
        "measurements": measurements,
        "future_ms": raw["limits"]["future_s"] * 1000,
        "past_ms": raw["limits"]["past_s"] * 1000,
    }


# Telegraf's JSON serializer writes whole seconds unless json_timestamp_units says otherwise; the unit of
# an epoch timestamp is told by its size (seconds below 10^11 reach the year 5138, ms below 10^14 too).
EPOCH_UNITS = [(10**11, 1000, 1), (10**14, 1, 1), (10**17, 1, 1000), (math.inf, 1, 1_000_000)]  # below, x, /


def epoch_ms(ts: int) -> int:
    """An epoch timestamp in s, ms, us or ns, in whole ms (integer arithmetic: ns overflow a double)."""
    return next(ts * mul // div for below, mul, div in EPOCH_UNITS if abs(ts) < below)


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused("non-numeric value", f"{name} = {json.dumps(value)[:80]}")
    if not math.isfinite(value):
        raise Refused("non-finite value", f"{name} = {value}")
    return float(value)


def _parse(payload: str | None, arrival_ms: int, catalog: dict):
    if payload is None or not payload.strip():
        raise Refused("empty message")
    try:
        record = json.loads(payload)
    except ValueError as exc:
        raise Refused("not JSON", str(exc)[:120]) from None
    if not isinstance(record, dict):
        raise Refused("not a JSON object", type(record).__name__)
    for key in ("name", "timestamp", "fields", "tags"):
        if key not in record or record[key] is None:
            raise Refused("missing field", key)
    name, ts, fields, tags = record["name"], record["timestamp"], record["fields"], record["tags"]
    if not isinstance(fields, dict) or not fields:
        raise Refused("missing field", "fields (empty or not an object)")
    if not isinstance(tags, dict):
        raise Refused("missing field", "tags (not an object)")
    measurement = catalog["measurements"].get(name)
    if measurement is None:
        raise Refused("unknown measurement", str(name)[:80])
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise Refused("bad timestamp", f"{json.dumps(ts)[:40]} is not an integer (s, ms, us or ns since the epoch)")
    ts = epoch_ms(ts)
    if ts > arrival_ms + catalog["future_ms"]:
        raise Refused("timestamp in the future", f"{(ts - arrival_ms) / 1000:.0f} s ahead of arrival")
    if ts < arrival_ms - catalog["past_ms"]:
        raise Refused("timestamp too old", f"{(arrival_ms - ts) / 86400000:.1f} days before arrival")
    return name, ts, fields, {k: str(v) for k, v in tags.items()}, measurement


def decode(payload: str | None, arrival_ms: int, catalog: dict) -> Decoded:
    try:
        name, ts, fields, tags, measurement = _parse(payload, arrival_ms, catalog)
        return _samples(name, ts, fields, tags, measurement)
    except Refused as refused:
        return Decoded(DEAD, refused.reason, refused.detail)


def _samples(name: str, ts: int, fields: dict, tags: dict, measurement: dict) -> Decoded:
    entity = [tags.get(measurement["entity"].get(key, key), "") for key in ENTITY_KEYS]
    series = name + "|" + "|".join(f"{k}={tags[k]}" for k in sorted(tags))
    catalogued = measurement["fields"]
    if measurement["by_tag"]:
        selector = tags.get(measurement["by_tag"], "")
        catalogued = {f.source: f for key, f in catalogued.items() if key == selector}
    samples, used = [], set()
    for spec in catalogued.values():
        if spec.source not in fields:
            continue
        value = _number(spec.source, fields[spec.source])
        if value < spec.lo:
            raise Refused("negative value", f"{spec.source} = {value:g}")
        if value > spec.hi:
            raise Refused("beyond physical bounds", f"{spec.source} = {value:g} > {spec.hi:g}")
        den = None
        if spec.kind == "ratio":
            if spec.per not in fields:
                raise Refused("missing field", f"{spec.per} (needed for {spec.source})")
            den = _number(spec.per, fields[spec.per])
        samples.append(Sample(spec.metric, spec.kind, spec.unit, spec.bucket, value * spec.scale, den))
        used.add(spec.source)
    return Decoded(
        DECODED,
        series=series,
        ts_ms=ts,
        entity=entity,
        samples=samples,
        unknown_fields=[f"{name}.{f}" for f in fields if f not in used],
    )

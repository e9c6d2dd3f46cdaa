"""The normalize job's catalog (catalog.yaml), read in one place: expanded here, decoded against in the JVM.

The decoder itself is Java (java/, in the process table function normalize_records): it gets the catalog as the
JSON this module writes, through the job parameter `sanlens.catalog` naming that file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml

CATALOG_FILE = Path(__file__).resolve().parent / "catalog.yaml"
# The one list of entity keys: tests/unit/test_contract_columns.py checks sanlens.metrics and stg_metrics.sql
# against it.
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
FUNCTION_CLASS = "io.sanlens.normalize.NormalizeRecords"
CATALOG_PARAMETER = "sanlens.catalog"  # NormalizeRecords.CATALOG_PARAMETER


def load(path: Path = CATALOG_FILE) -> dict:
    """The catalog with every `{n}` histogram field expanded to its buckets, as the decoder reads it."""
    raw = yaml.safe_load(path.read_text())
    default_max = float(raw["limits"]["cumulative_max"])
    measurements = {}
    for name, spec in raw["measurements"].items():
        fields = {}
        for key, f in spec["fields"].items():
            for n in range(spec.get("buckets", 1)) if "{n}" in key else [-1]:
                hi = float(f.get("max", default_max))
                fields[key.replace("{n}", str(n))] = {
                    "source": f.get("field", key.replace("{n}", str(n))),
                    "metric": f["metric"],
                    "kind": f["kind"],
                    "unit": f["unit"],
                    "scale": float(f.get("scale", 1)),
                    "lo": float(f.get("min", 0)),
                    "hi": None if math.isinf(hi) else hi,
                    "per": f.get("per"),
                    "bucket": n,
                }
        measurements[name] = {"entity": spec["entity"], "by_tag": spec.get("by_tag"), "fields": fields}
    return {
        "entity_keys": ENTITY_KEYS,
        "measurements": measurements,
        "future_ms": raw["limits"]["future_s"] * 1000,
        "past_ms": raw["limits"]["past_s"] * 1000,
    }


def write_json(target: Path, source: Path = CATALOG_FILE) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(load(source)))
    return target

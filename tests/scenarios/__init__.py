"""The tests' and the benchmarks' scenario fleets, one YAML file each in this folder (the simulator's format:
ingest/simulator/scenario.py), with str.format placeholders for what a run makes its own, such as {id} (a literal
brace is doubled: `switches: [{{name: {id}-sw, ports: 16}}]`)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def text(name: str, **values) -> str:
    """tests/scenarios/<name>.yaml with its placeholders filled in from `values`."""
    return (HERE / f"{name}.yaml").read_text().format(**values)

"""The stack's settings have one home (ingest/settings.py): no other module writes a default port of the stack. No
process of the data path imports the command line's package to learn them either (tests/unit/test_imports.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ingest import settings

ROOT = Path(settings.__file__).resolve().parent.parent
DATA_PATH = ["flink-jobs", "ingest", "slo", "clickhouse"]


def modules(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py") if ".sanlens" not in p.parts)


def written_ports(path: Path) -> list[str]:
    """Where `path`'s code (not its docstrings) writes a default port of the stack: as a number, or after a colon
    in a string (an address)."""
    ports = set(settings.PORTS.values())
    tree = ast.parse(path.read_text())
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in docstrings:
            continue
        if (isinstance(node.value, int) and node.value in ports) or (
            isinstance(node.value, str) and any(re.search(rf":{p}(?!\d)", node.value) for p in ports)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    return found


def test_no_module_but_the_settings_writes_a_default_port_of_the_stack():
    written = [
        hit
        for path in modules(*DATA_PATH, "sanlensctl", "grafana")
        if path != Path(settings.__file__).resolve()
        for hit in written_ports(path)
    ]
    assert not written, "a default port written outside ingest/settings.py:\n" + "\n".join(written)

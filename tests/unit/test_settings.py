"""The stack's settings have one home (ingest/settings.py): no other module writes a default port of the stack. No
process of the data path imports the command line's package to learn them either (tests/unit/test_imports.py)."""

from __future__ import annotations

import ast
import re
import subprocess
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


# The compose file's addresses are its containers' (each image's own port), not the local stack's.
CONFIG_SUFFIXES = (".yml", ".yaml", ".toml", ".ini", ".conf", ".tmpl", ".cfg", ".properties", ".sh")
COMPOSE = "docker-compose.yml"
PORTS = "|".join(str(p) for p in settings.PORTS.values())
# a default port in a local address, or as the default of dbt's env_var (a container's address, such as the
# compose file's clickhouse:8123, is another stack's)
LOCAL = re.compile(rf"(127\.0\.0\.1|localhost|0\.0\.0\.0):({PORTS})(?!\d)|env_var\([^)]*'({PORTS})'")


def config_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in listed if f.endswith(CONFIG_SUFFIXES) and f != COMPOSE]


def local_addresses(name: str, text: str) -> list[str]:
    return [f"{name}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if LOCAL.search(line)]


def test_the_rule_finds_a_default_port_in_a_config_file():
    planted = "port: \"{{ env_var('SANLENS_CLICKHOUSE_PORT', '8123') }}\"\nurl: http://127.0.0.1:9097/alerts\n"
    assert len(local_addresses("profiles.yml", planted)) == 2
    assert not local_addresses("compose", "host: clickhouse\nport: 8123\nurl: http://sanlens-alert-webhook/alerts")


def test_no_config_file_writes_a_default_port_of_the_local_stack():
    hits = [hit for p in config_files() for hit in local_addresses(str(p.relative_to(ROOT)), p.read_text("utf-8"))]
    assert not hits, "a default port of the local stack written outside ingest/settings.py:\n" + "\n".join(hits)

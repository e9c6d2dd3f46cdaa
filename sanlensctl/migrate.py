"""Applies clickhouse/migrations/NNNN_name.sql in order, once each, recording them in sanlens.schema_migrations."""

from __future__ import annotations

import hashlib
import re
import sys

from clickhouse.schema import statements
from sanlensctl import config, db
from sanlensctl.errors import SanlensError

MIGRATIONS = config.ROOT / "clickhouse" / "migrations"
NAME_RE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrations() -> list[tuple[int, str, str]]:
    found = []
    for path in sorted(MIGRATIONS.glob("*.sql")):
        m = NAME_RE.match(path.name)
        if not m:
            raise SanlensError(f"{path.relative_to(config.ROOT)}: migration names are NNNN_snake_case.sql")
        found.append((int(m.group(1)), path.name, path.read_text()))
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise SanlensError("two migrations share a version number in clickhouse/migrations/")
    return found


def apply(url: str | None = None, quiet: bool = False) -> list[str]:
    client = db.client(url)
    client.command(f"CREATE DATABASE IF NOT EXISTS {config.DATABASE}")
    client.command(f"""CREATE TABLE IF NOT EXISTS {config.DATABASE}.schema_migrations
        (version UInt32, name String, checksum String, applied_at DateTime DEFAULT now())
        ENGINE = ReplacingMergeTree ORDER BY version""")
    applied = {
        row[0]: (row[1], row[2])
        for row in client.query(
            f"SELECT version, name, checksum FROM {config.DATABASE}.schema_migrations FINAL"
        ).result_rows
    }
    done = []
    for version, name, sql in migrations():
        checksum = hashlib.sha256(sql.encode()).hexdigest()
        if version in applied:
            if applied[version][1] != checksum:
                print(f"warning: {name} changed after it was applied; write a new migration instead", file=sys.stderr)
            continue
        for statement in statements(sql):
            try:
                client.command(statement)
            except Exception as exc:
                raise SanlensError(f"migration {name} failed: {str(exc).splitlines()[0][:300]}") from exc
        client.insert(
            f"{config.DATABASE}.schema_migrations",
            [[version, name, checksum]],
            column_names=["version", "name", "checksum"],
        )
        done.append(name)
        if not quiet:
            print(f"applied {name}")
    return done

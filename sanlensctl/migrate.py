"""Applies clickhouse/migrations/NNNN_name.sql in order, once each, recording them in sanlens.schema_migrations."""

from __future__ import annotations

import hashlib
import os
import re
import sys

from clickhouse import roles
from clickhouse.schema import statements
from ingest import settings
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
    apply_access(client, url, quiet)
    return done


def apply_access(client, url: str | None = None, quiet: bool = False) -> None:
    """The users and roles of clickhouse/access/roles.yaml on a ClickHouse server, with a role per customer of the
    data and of the customers file (run again after new customers arrive); each fixed role's user with the password
    SANLENS_CLICKHOUSE_<ROLE>_PASSWORD if set. The embedded server applies the same definitions itself, per query."""
    if _server_name(url) == "sanlens-embedded":
        return
    customers = roles.customers(client)
    passwords = {
        name: os.environ[roles.password_variable(name)]
        for name in roles.roles(customers)
        if os.environ.get(roles.password_variable(name))
    }
    for statement in roles.server_statements(customers, passwords, roles.store_tables(client)):
        try:
            client.command(statement)
        except Exception as exc:
            raise SanlensError(f"users and roles: {statement.split(' BY ')[0][:120]} failed: {str(exc)[:300]}") from exc
    if not quiet:
        print(f"users and roles: {', '.join(roles.roles(customers))} ({len(customers)} customers)")


def _server_name(url: str | None) -> str:
    """The server's display name from its answer's headers: the local stack's says sanlens-embedded."""
    import base64
    import urllib.request

    from clickhouse.client import credentials

    url = url or config.CLICKHOUSE_URL
    user, password = credentials(url)
    parts = urllib.parse.urlsplit(url)
    port = parts.port or settings.PORTS["CLICKHOUSE"]
    request = urllib.request.Request(f"{parts.scheme}://{parts.hostname}:{port}/?query=SELECT%201")
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    with urllib.request.urlopen(request, timeout=10) as resp:
        return resp.headers.get("X-ClickHouse-Server-Display-Name", "")

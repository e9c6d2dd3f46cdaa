"""Users and roles as code: clickhouse/access/roles.yaml read once, for both kinds of store.

- On a ClickHouse server, `./sanlens migrate` runs `server_statements`: a role per entry (and per customer), its grants,
  a settings profile for the read-only ones, RESTRICTIVE row policies for each customer, and a user per role whose
  password it is given (the local stack's passwords file, or SANLENS_CLICKHOUSE_<ROLE>_PASSWORD).
- The embedded server cannot CREATE USER or ROW POLICY: it authenticates each request against the passwords file and
  runs a role's query under the same rules (`Role.table_filters`: additional_table_filters; readonly).

The local stack's passwords are generated on first use into .sanlens/clickhouse-passwords.json (mode 0600, the folder
and file of ingest/settings.py's CLICKHOUSE_PASSWORDS); every client of the stack reads its user's from there."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import fnmatch
import json
import os
import re
import secrets
from pathlib import Path

import yaml

from ingest import settings

DEFINITIONS = Path(__file__).resolve().parent / "access" / "roles.yaml"
NAME_RE = re.compile(r"[^a-z0-9_]+")


_read: tuple[float, dict] | None = None


def definitions() -> dict:
    """roles.yaml, read again when it changes."""
    global _read
    mtime = DEFINITIONS.stat().st_mtime
    if _read is None or _read[0] != mtime:
        _read = (mtime, yaml.safe_load(DEFINITIONS.read_text()))
    return _read[1]


def admin() -> str:
    return definitions()["admin"]


def customer_role(customer: str) -> str:
    """customer_globex for 'globex' (lower case, anything but letters, digits and _ as _)."""
    return definitions()["roles"]["customer"]["name"].format(customer=NAME_RE.sub("_", customer.lower()).strip("_"))


def file_customers() -> list[str]:
    path = settings.ROOT / definitions()["customers_file"]
    return [str(c) for c in (yaml.safe_load(path.read_text()) or [])] if path.exists() else []


def customers(client) -> list[str]:
    """Every customer of the topology and of the customers file."""
    try:
        found = [r[0] for r in client.query("SELECT DISTINCT customer FROM sanlens.topology").result_rows]
    except Exception:  # no topology table yet
        found = []
    return sorted(set(found) | set(file_customers()))


def quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


@dataclasses.dataclass(frozen=True)
class Role:
    """One role as a query sees it: what it may read and write, and which rows (a customer's)."""

    name: str
    readonly: bool
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    customer: str | None = None
    rows: tuple[tuple[str, str], ...] = ()  # (column, filter) in order: the first column a table has decides
    withheld: tuple[str, ...] = ()  # catalogue tables the other read-only roles read and this one may not

    def may_read(self, table: str) -> bool:
        return _matches(table, list(self.reads))

    def may_write(self, table: str) -> bool:
        return _matches(table, list(self.writes))

    def may_read_catalogue(self, table: str) -> bool:
        """A table of `system` or `information_schema`: those of roles.yaml's system_tables (what clients ask on
        connecting, the catalogue), a writer's parts and mutations too, less those withheld from this role."""
        db, _, name = table.lower().rpartition(".")
        if _matches(table.lower(), [w.lower() for w in self.withheld]):
            return False
        if db == "information_schema":
            return True
        return name in definitions()["system_tables"] or not self.readonly and name in ("parts", "mutations")

    def row_filter(self, columns: set[str]) -> str | None:
        """This role's rows of a table with these columns: None if it sees them all, '0' if none."""
        if self.customer is None:
            return None
        for column, condition in self.rows:
            if column in columns:
                return condition.format(customer=quote(self.customer))
        return "0"

    def table_filters(self, tables: dict[str, set[str]]) -> dict[str, str]:
        """additional_table_filters for every table of the store (name -> its columns): a table it may not read
        returns no row (the embedded server refuses the query before that: this is the second lock)."""
        out = {}
        for table, columns in tables.items():
            condition = self.row_filter(columns) if self.may_read(table) else "0"
            if condition is not None:
                out[table] = condition
        return out


def roles(customers_: list[str] = ()) -> dict[str, Role]:
    """Every role by name: the fixed ones and one per customer."""
    d = definitions()["roles"]
    out = {}
    for name, r in d.items():
        if name == "customer":
            continue
        out[name] = Role(name, bool(r["readonly"]), tuple(r.get("reads", ())), tuple(r.get("writes", ())))
    for c in customers_:
        r = d["customer"]
        name = customer_role(c)
        rows = tuple((col, cond) for col, cond in r["rows"].items())
        out[name] = Role(name, True, tuple(r["reads"]), (), customer=c, rows=rows, withheld=tuple(r["withheld"]))
    return out


# ---- passwords of the local stack ------------------------------------------------------------------------------


def read_passwords(path: Path | None = None) -> dict[str, str]:
    path = path or settings.CLICKHOUSE_PASSWORDS
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def ensure_passwords(users: list[str], path: Path | None = None) -> dict[str, str]:
    """Every user's password, generated into the passwords file (mode 0600) for those that have none yet; several
    processes at once (two stacks, a test) agree through a lock."""
    path = path or settings.CLICKHOUSE_PASSWORDS
    have = read_passwords(path)
    if all(u in have for u in users):
        return have
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        have = read_passwords(path)
        missing = [u for u in users if u not in have]
        if missing:
            have.update({u: secrets.token_urlsafe(24) for u in missing})
            tmp = path.with_suffix(".tmp")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(have, fh, indent=1, sort_keys=True)
            os.replace(tmp, path)
    return have


def local_users() -> list[str]:
    return [admin(), *roles()]


def password_variable(user: str) -> str:
    """The environment variable that holds a user's password: for `migrate` on a server, Grafana's data sources, the
    local stack's clients."""
    return f"SANLENS_CLICKHOUSE_{user.upper()}_PASSWORD"


def password(user: str) -> str:
    """A user's password on the local stack: SANLENS_CLICKHOUSE_<USER>_PASSWORD, else the passwords file's (made if
    missing)."""
    env = os.environ.get(password_variable(user))
    if env:
        return env
    return ensure_passwords([*local_users(), user])[user]


# ---- a ClickHouse server ---------------------------------------------------------------------------------------


def server_statements(customers_: list[str], passwords: dict[str, str], tables: dict[str, set[str]]) -> list[str]:
    """What makes a ClickHouse server hold these roles: idempotent (IF NOT EXISTS, grants and policies replaced).
    `tables`: every table of the store with its columns, for the customers' policies; `passwords`: the users to
    create (a role without one is created without its user: grant it to your own users)."""
    d = definitions()
    limits = d["limits"]
    out = []
    every = sorted(tables)
    # Once a table has any row policy, a user without one sees none of its rows: everyone sees every row first
    # (permissive), then each customer's RESTRICTIVE policy narrows it for that customer alone.
    for name, r in roles(customers_).items():
        out.append(f"CREATE ROLE IF NOT EXISTS {name}")
        out.append(f"REVOKE ALL ON *.* FROM {name}")
        # a customer's: each table its rows can be told apart in, not the wildcard (a later table needs a migrate)
        readable = [t for t in every if r.may_read(t) and r.row_filter(tables[t]) != "0"] if r.customer else r.reads
        for pattern in readable:
            out.append(f"GRANT SELECT ON {pattern} TO {name}")
        for pattern in r.writes:
            # ALTER DELETE: a rollup's REPLACE and DROP PARTITION (ClickHouse asks it of the table replaced)
            out.append(f"GRANT INSERT, ALTER DELETE ON {pattern} TO {name}")
        if any(p.endswith("*") and "__" in p for p in r.writes):
            out.extend(f"GRANT CREATE TABLE, DROP TABLE ON {p} TO {name}" for p in r.writes if p.endswith("*"))
        if r.readonly:
            profile = f"{name}_limits"
            out.append(
                f"CREATE SETTINGS PROFILE OR REPLACE {profile} SETTINGS readonly = 1, "
                + ", ".join(f"{k} = {v['default']} MAX {v['max']}" for k, v in limits.items())
                + f" TO {name}"
            )
        if r.customer is not None:
            for table in readable:
                condition = r.row_filter(tables[table])
                out.append(
                    f"CREATE ROW POLICY OR REPLACE {name} ON {table} AS RESTRICTIVE FOR SELECT USING {condition} "
                    f"TO {name}"
                )
            # The server lets every user read system.tables and system.columns whatever the grants: none of their rows
            # for this role. information_schema needs a grant there (select_from_information_schema_requires_grant).
            out.extend(
                f"CREATE ROW POLICY OR REPLACE {name} ON {table} AS RESTRICTIVE FOR SELECT USING 0 TO {name}"
                for table in withheld_system_tables(r)
            )
        if name in passwords:
            out.append(f"CREATE USER IF NOT EXISTS {name} IDENTIFIED WITH sha256_password BY {quote(passwords[name])}")
            out.append(f"ALTER USER {name} IDENTIFIED WITH sha256_password BY {quote(passwords[name])}")
            out.append(f"GRANT {name} TO {name}")
            out.append(f"ALTER USER {name} DEFAULT ROLE {name}")
    withheld = sorted({t for r in roles(customers_).values() for t in withheld_system_tables(r)})
    for table in [*every, *withheld]:
        out.append(f"CREATE ROW POLICY OR REPLACE sanlens_every_row ON {table} AS PERMISSIVE FOR SELECT USING 1 TO ALL")
    return out


def withheld_system_tables(role: Role) -> list[str]:
    return [t for t in role.withheld if t.startswith("system.") and "*" not in t]


def store_tables(client) -> dict[str, set[str]]:
    """Every table and view of the store's databases with its columns."""
    dbs = ", ".join(quote(db) for db in definitions()["databases"])
    rows = client.query(
        f"SELECT database || '.' || table, groupArray(name) FROM system.columns WHERE database IN ({dbs}) "
        "GROUP BY database, table"
    ).result_rows
    return {name: set(columns) for name, columns in rows}

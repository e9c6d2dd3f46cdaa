"""The embedded ClickHouse server: the ClickHouse engine (chdb) behind the ClickHouse HTTP interface.

This is the only place in sanlens where local mode differs in kind from production. One process owns
the database folder (chdb allows one opener) and serves clients that speak ClickHouse's HTTP protocol:
clickhouse-connect, dbt-clickhouse (driver http) and curl. Everything else reaches ClickHouse through
a URL, so pointing that URL at a real server changes nothing else.

    python clickhouse/embedded/server.py --path DIR [--host 127.0.0.1] [--port 8123] [--user U --password P]
        [--passwords FILE] [--max-request-size 1Gi] [--client-timeout 60]
        [--readers 8] [--writers 4] [--max-execution-time 30] [--max-memory-usage 2G]
        [--max-execution-time-cap 600] [--max-memory-usage-cap 8G] [--max-server-memory-usage BYTES]

Queries run in parallel on connections of one chdb engine (chdb 4: one engine per process, any number of
connections to it), reads and writes on connections of their own, each query under a timeout and a
memory limit (`Limits`); see clickhouse/README.md. Every request carries a user and its password (the admin's, or a
role's of clickhouse/access/roles.yaml from the passwords file): a role's query runs under its rules (`Access`,
docs/security.md). A body over --max-request-size, a client silent for --client-timeout seconds and a malformed
request get ClickHouse's error codes; none stops the server.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import email
import email.policy
import gzip
import hmac
import json
import os
import queue
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import chdb
import lz4.frame
import zstandard

from clickhouse import roles
from ingest import settings

# URL parameters that are part of the HTTP protocol rather than ClickHouse settings.
TRANSPORT_PARAMS = {
    "query",
    "database",
    "session_id",
    "session_timeout",
    "session_check",
    "default_format",
    "user",
    "password",
    "query_id",
    "compress",
    "decompress",
    "quota_key",
    "buffer_size",
    "wait_end_of_query",
    "send_progress_in_http_headers",
    "http_headers_progress_interval_ms",
    "enable_http_compression",
    "http_zlib_compression_level",
    "client_protocol_version",
    "role",
}
# Formats that carry their own column names and types, so they are read without a structure.
SELF_DESCRIBING = {
    "native",
    "parquet",
    "arrow",
    "arrowstream",
    "orc",
    "avro",
    "rowbinarywithnamesandtypes",
    "csvwithnamesandtypes",
    "tabseparatedwithnamesandtypes",
    "jsoncompacteachrowwithnamesandtypes",
}
INSERT_RE = re.compile(
    r"^\s*INSERT\s+INTO\s+(?:TABLE\s+)?(?P<table>[\w.`\"]+)\s*(?:\((?P<cols>[^)]*)\))?\s*"
    r"(?:SETTINGS\s+(?P<settings>[^()]+?)\s+)?FORMAT\s+(?P<fmt>\w+)(?:[ \t]*;?[ \t]*\r?\n|[ \t]*;?[ \t]*$)",
    re.I,
)
SET_RE = re.compile(r"^\s*SET\s+(?P<assignments>.+?)\s*;?\s*$", re.I | re.S)
USE_RE = re.compile(r"^\s*USE\s", re.I)
# Statements that only read, after any comments and parentheses: they run on the reads' connections. Each
# repeated part can match in one way only: with `\s+` there (or a comment allowed to run past its `*/`), a
# write after a long run of spaces, as dbt indents its models, backtracked exponentially and hung the server.
READ_RE = re.compile(
    r"^(?:\s|--[^\n]*(?:\n|$)|/\*(?:[^*]|\*(?!/))*\*/|\()*(?:SELECT|WITH|SHOW|DESCRIBE|DESC|EXISTS|EXPLAIN)\b", re.I
)
LIMIT_IN_SQL_RE = re.compile(r"\b(max_execution_time|max_memory_usage)\s*=\s*('[^']*'|[\w.]+)")
# Background merges at nice 19 among the engine's threads: an insert or a query runs first, the merges take what is
# left (docs/benchmarks.md, "1,000 arrays keep up").
SERVER_SETTINGS = {"os_threads_nice_value_merge_mutate": 19}
ERROR_RE = re.compile(r"Code: (\d+)\.")
HTTP_STATUS = {
    62: 400,
    46: 400,
    47: 400,
    36: 400,
    27: 400,
    6: 400,
    26: 400,
    53: 400,
    43: 400,
    115: 400,
    60: 404,
    81: 404,
    516: 401,
    497: 403,
    159: 504,
    394: 500,
    202: 503,
    452: 400,
}


HTTP_STATUS[209] = 408
HTTP_STATUS[164] = 403
HTTP_STATUS[33] = 400


class ClickHouseError(Exception):
    def __init__(self, code: int, message: str, status: int | None = None):
        super().__init__(message)
        self.code, self.status = code, status or HTTP_STATUS.get(code, 500)


def decompress(body: bytes, encoding: str) -> bytes:
    """Decode a request body; a streamed insert is many lz4/zstd frames back to back, so read them all."""
    encoding = (encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding == "lz4":
        out, rest = [], body
        while rest:
            d = lz4.frame.LZ4FrameDecompressor()
            out.append(d.decompress(rest))
            rest = d.unused_data
        return b"".join(out)
    if encoding == "zstd":
        reader = zstandard.ZstdDecompressor().stream_reader(body, read_across_frames=True)
        return reader.read()
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    raise ClickHouseError(
        36, f"Code: 36. DB::Exception: Unknown Content-Encoding of HTTP request: {encoding}. (BAD_ARGUMENTS)"
    )


def split_query(url_query: str | None, body: bytes) -> tuple[str, bytes | None]:
    """Where the statement is and where its data is: ClickHouse reads `query=` from the URL and the body
    as data, or, without it, the statement from the start of the body and any `FORMAT x` data after it."""
    if url_query is not None:
        return url_query, (body or None)
    m = INSERT_RE.match(body[:65536].decode("latin-1"))
    if m:
        return body[: m.end()].decode().strip(), body[m.end() :]
    return body.decode(), None


def parse_assignments(text: str) -> dict[str, str]:
    """'a = 1, b = 'x'' -> {'a': '1', 'b': "'x'"} (values stay SQL literals)."""
    out = {}
    for part in re.split(r",(?=(?:[^']*'[^']*')*[^']*$)", text):
        if "=" in part:
            key, value = part.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def sql_literal(value: str) -> str:
    if re.fullmatch(r"-?\d+(\.\d+)?", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def parse_size(value: str) -> float:
    """A setting's number as ClickHouse reads it: 30, 2.5, '2G', '512Mi' (bytes or seconds)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(?:([KMGT])(i?)B?)?", value.strip().strip("'\""), re.I)
    if not m:
        raise ValueError(value)
    number, unit, binary = float(m.group(1)), (m.group(2) or "").upper(), m.group(3)
    return number * (1024 if binary else 1000) ** ("KMGT".index(unit) + 1 if unit else 0)


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one query may take. A read runs with `timeout` seconds and `memory` bytes unless it asks for
    more (URL parameter, session SET or its own SETTINGS clause), up to the caps; a write (an insert, DDL,
    the loader's rollups, dbt's models) runs with the caps, since one cut halfway leaves half its rows."""

    timeout: float
    memory: int
    timeout_cap: float
    memory_cap: int

    def settings(self, write: bool) -> dict[str, str]:
        timeout, memory = (self.timeout_cap, self.memory_cap) if write else (self.timeout, self.memory)
        return {"max_execution_time": f"{timeout:g}", "max_memory_usage": str(int(memory))}

    def check(self, name: str, value: str) -> None:
        """Refuse a value above the cap, as a ClickHouse settings constraint does (0 is no limit at all)."""
        cap = {"max_execution_time": self.timeout_cap, "max_memory_usage": self.memory_cap}[name]
        try:
            number = parse_size(value)
        except ValueError:
            number = None
        if number is None or number == 0 or number > cap:
            raise ClickHouseError(
                452,
                f"Code: 452. DB::Exception: Setting {name} shouldn't be greater than {cap:.0f} "
                f"(asked for {value}; 0 is no limit). (SETTING_CONSTRAINT_VIOLATION)",
            )

    def check_all(self, settings: dict[str, str], sql: str) -> None:
        for name, value in [*settings.items(), *LIMIT_IN_SQL_RE.findall(sql)]:
            if name in ("max_execution_time", "max_memory_usage"):
                self.check(name, value)


class Connection:
    """One connection of the engine: its own session state, one query at a time. Its `baseline` settings
    (the limits of its lane) are its defaults, and a request's own settings are set for its query only."""

    def __init__(self, path: str, baseline: dict[str, str]):
        self.baseline = baseline
        self.conn = chdb.connect(path + "?" + "&".join(f"{k}={v}" for k, v in baseline.items()))

    def run(self, sql: str, fmt: str, settings: dict[str, str], params: dict | None):
        applied = []
        try:
            for key, value in settings.items():
                self.conn.query(f"SET {key} = {value}")
                applied.append(key)
            return self.conn.query(sql, fmt, params=params) if params else self.conn.query(sql, fmt)
        except Exception as exc:  # chdb raises ChdbError with ClickHouse's own text
            text = str(exc).strip()
            m = ERROR_RE.search(text)
            raise ClickHouseError(
                int(m.group(1)) if m else 1001, text if m else f"Code: 1001. DB::Exception: {text}. (STD_EXCEPTION)"
            ) from exc
        finally:
            for key in applied:
                self.conn.query(f"SET {key} = {self.baseline.get(key, 'DEFAULT')}")


class Lane:
    """Connections for one kind of query. A request takes an idle one, waiting its turn at most `wait`
    seconds (its own timeout): then it fails with TOO_MANY_SIMULTANEOUS_QUERIES."""

    def __init__(self, name: str, path: str, size: int, baseline: dict[str, str]):
        self.name, self.size, self.timeout = name, size, float(baseline["max_execution_time"])
        self.idle: queue.Queue[Connection] = queue.Queue()
        for _ in range(size):
            self.idle.put(Connection(path, baseline))

    @contextlib.contextmanager
    def connection(self, wait: float):
        try:
            conn = self.idle.get(timeout=wait)
        except queue.Empty:
            raise ClickHouseError(
                202,
                f"Code: 202. DB::Exception: Too many simultaneous queries: the embedded server's {self.size} "
                f"connections for {self.name} stayed busy for {wait:g} s. (TOO_MANY_SIMULTANEOUS_QUERIES)",
            ) from None
        try:
            yield conn
        finally:
            self.idle.put(conn)

    def close(self) -> None:
        while not self.idle.empty():
            self.idle.get().conn.close()


class Engine:
    """One chdb engine on the data folder, reached through connections that run queries in parallel (chdb 4:
    any number of connections to the process's one engine, each with its own session state). Reads and
    writes have lanes of their own, so an insert never waits for a connection behind slow reads, and every
    query runs under the limits of its lane (`Limits`)."""

    def __init__(self, path: str, readers: int, writers: int, limits: Limits, server_memory: float | None = None):
        self.path, self.limits = path, limits
        self.tmp = os.path.join(path, ".http_inserts")
        os.makedirs(self.tmp, exist_ok=True)
        # The first connection starts the engine: server settings are read then.
        server = {**SERVER_SETTINGS, **({"max_server_memory_usage": int(server_memory)} if server_memory else {})}
        boot = chdb.connect(path + "?" + "&".join(f"{k}={v}" for k, v in server.items()))
        self.write = Lane("writes", path, writers, limits.settings(write=True))
        self.read = Lane("reads", path, readers, limits.settings(write=False))
        boot.close()
        self.sessions: dict[str, dict[str, str]] = {}
        self.sessions_lock = threading.Lock()
        self.access = Access()
        with self.read.connection(0) as conn:
            self.version = conn.run("SELECT version()", "TabSeparated", {}, None).bytes().decode().strip()

    def close(self) -> None:
        self.read.close()
        self.write.close()

    def execute(
        self,
        sql: str,
        fmt: str,
        settings: dict[str, str],
        params: dict,
        session_id: str | None,
        database: str | None,
        data: bytes | None,
        role: roles.Role | None = None,
    ):
        with self.sessions_lock:
            effective = dict(self.sessions.get(session_id, {})) if session_id else {}
        effective.update(settings)
        self.limits.check_all(effective, sql)
        m = SET_RE.match(sql)
        if role is not None:
            if role.readonly:
                if data is not None or m:
                    raise readonly_error(role)
                return self._as_reader(role, sql, fmt, effective, params, database)
            self.access.check(self, role, sql, params, database, data)
        write = data is not None or not (m or READ_RE.match(sql))
        lane = self.write if write else self.read
        timeout = parse_size(effective["max_execution_time"]) if "max_execution_time" in effective else lane.timeout
        with lane.connection(timeout) as conn:
            use = database or USE_RE.match(sql)  # lasts for the request, as the connection serves others next
            try:
                if database:
                    conn.run(f"USE `{database}`", fmt, {}, None)
                if data is not None:
                    return self._insert(conn, sql, data, effective, params)
                if m:
                    # Over HTTP, SET lasts as long as the session; without one it has no effect.
                    assignments = parse_assignments(m.group("assignments"))
                    conn.run("SELECT 1", fmt, {**effective, **assignments}, None)  # validates names and values
                    if session_id:
                        with self.sessions_lock:
                            self.sessions.setdefault(session_id, {}).update(assignments)
                    return None
                return conn.run(sql, fmt, effective, params)
            finally:
                if use:
                    conn.conn.query("USE default")

    def _as_reader(self, role: roles.Role, sql: str, fmt: str, settings: dict[str, str], params: dict, database):
        """A read-only role's query: checked (`Access.check`), then run on a connection of its own under the role's
        rules, set after the request's settings so that none of those can widen them, readonly last (the query's
        own SETTINGS can change nothing then); the connection is closed after, as readonly cannot be unset."""
        self.access.check(self, role, sql, params, database, None)
        filters = role.table_filters(self.access.tables(self))
        rules = {
            "additional_table_filters": "{"
            + ", ".join(f"{roles.quote(t)}: {roles.quote(c)}" for t, c in sorted(filters.items()))
            + "}",
            "readonly": "1",
        }
        timeout = parse_size(settings["max_execution_time"]) if "max_execution_time" in settings else self.read.timeout
        with self.read.connection(timeout) as lane_conn:  # the reads' lane counts it among the queries at once
            conn = Connection(self.path, lane_conn.baseline)
            try:
                if database:
                    conn.run(f"USE `{database}`", fmt, {}, None)
                for key, value in {**settings, **rules}.items():
                    conn.run(f"SET {key} = {value}", fmt, {}, None)
                return conn.conn.query(sql, fmt, params=params) if params else conn.conn.query(sql, fmt)
            except ClickHouseError:
                raise
            except Exception as exc:
                text = str(exc).strip()
                code = ERROR_RE.search(text)
                raise ClickHouseError(int(code.group(1)) if code else 1001, text) from exc
            finally:
                conn.conn.close()

    def _insert(self, conn: Connection, sql: str, data: bytes, settings: dict[str, str], params: dict):
        m = INSERT_RE.match(sql + "\n")
        if not m:
            if not sql.strip():
                return conn.run(data.decode(), "TabSeparated", settings, params)
            # Text data appended to the statement is how ClickHouse itself reads `INSERT ... VALUES` bodies.
            return conn.run(sql + "\n" + data.decode(), "TabSeparated", settings, params)
        table, cols, fmt = m.group("table"), m.group("cols"), m.group("fmt")
        if m.group("settings"):
            settings = {**settings, **parse_assignments(m.group("settings"))}
        columns = f"({cols})" if cols else ""
        source_args = f"'{{path}}', '{fmt}'"
        if fmt.lower() not in SELF_DESCRIBING:
            source_args += ", " + sql_literal(self._structure(conn, table, cols, settings))
        fd, path = tempfile.mkstemp(dir=self.tmp)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            statement = f"INSERT INTO {table} {columns} SELECT * FROM file({source_args.format(path=path)})"
            return conn.run(statement, "TabSeparated", settings, params)
        finally:
            os.unlink(path)

    def _structure(self, conn: Connection, table: str, cols: str | None, settings: dict[str, str]) -> str:
        described = conn.run(f"DESCRIBE TABLE {table}", "JSONCompact", settings, None).bytes()
        rows = json.loads(described)["data"]
        types = {r[0]: r[1] for r in rows if r[2] not in ("MATERIALIZED", "ALIAS", "EPHEMERAL")}
        names = [c.strip().strip('`"') for c in cols.split(",")] if cols else list(types)
        return ", ".join(f"`{n}` {types[n]}" for n in names)


TABLE_FUNCTIONS = {"numbers", "numbers_mt", "zeros", "zeros_mt", "values", "generate_series", "generateseries", "null",
                   "view", "format", "generaterandom", "one"}  # fmt: skip
DENIED_FUNCTION_RE = re.compile(r"^(file|dictget|dicthas|joinget|url|s3|hdfs|remote|cluster|executable|input)", re.I)
IN_RE = re.compile(r"^(global)?(not)?(null)?in(ignoreset)?$", re.I)
AST_LINE_RE = re.compile(r"^( *)(\w+)(?: (\S+))?")
TARGET_RE = re.compile(
    r"^(?:INSERT INTO|ALTER TABLE|CREATE TABLE(?: IF NOT EXISTS)?|DROP TABLE(?: IF EXISTS)?|DESCRIBE TABLE) ([\w.`]+)",
    re.I,
)


def readonly_error(role: roles.Role) -> ClickHouseError:
    return ClickHouseError(
        164, f"Code: 164. DB::Exception: {role.name}: Cannot execute query in readonly mode. (READONLY)"
    )


class Access:
    """The roles of clickhouse/access/roles.yaml as this server applies them: what a role's statement may touch,
    checked on ClickHouse's own parse of it (formatQuery, EXPLAIN AST), and the catalogue its filters cover (the
    store's tables with their columns, the customers of the topology), read again every few seconds."""

    TTL = 2.0

    def __init__(self):
        self.lock = threading.Lock()
        self.cached: tuple[float, dict[str, set[str]], set[str], list[str]] | None = None

    def catalogue(self, engine: Engine) -> tuple[dict[str, set[str]], set[str], list[str]]:
        with self.lock:
            if self.cached and time.monotonic() - self.cached[0] < self.TTL:
                return self.cached[1:]
        defs = roles.definitions()
        dbs = ", ".join(roles.quote(d) for d in defs["databases"])
        with engine.read.connection(engine.read.timeout) as conn:

            def rows_of(sql: str) -> list:
                return json.loads(conn.run(sql, "JSONCompact", {}, None).bytes())["data"]

            rows = rows_of(
                f"SELECT database || '.' || table, groupArray(name) FROM system.columns WHERE database IN ({dbs}) "
                "GROUP BY database, table"
            )
            every = rows_of("SELECT database || '.' || name FROM system.tables")
            customers: list[str] = []
            if any(r[0] == "sanlens.topology" for r in rows):
                customers = [r[0] for r in rows_of("SELECT DISTINCT customer FROM sanlens.topology")]
        tables = {name: set(columns) for name, columns in rows}
        found = (tables, {r[0] for r in every}, sorted(set(customers) | set(roles.file_customers())))
        with self.lock:
            self.cached = (time.monotonic(), *found)
        return found

    def tables(self, engine: Engine) -> dict[str, set[str]]:
        return self.catalogue(engine)[0]

    def role(self, engine: Engine, user: str) -> roles.Role | None:
        every = roles.roles(self.catalogue(engine)[2])
        if user not in every and user.startswith("customer_"):  # a customer of the file or the data, just arrived
            self.cached = None
            every = roles.roles(self.catalogue(engine)[2])
        return every.get(user)

    def check(self, engine: Engine, role: roles.Role, sql: str, params: dict, database: str | None, data) -> None:
        """Refuses (ACCESS_DENIED) what the role may not do: a table it may not read or write, a table function or a
        function that reaches outside the store (file, url, remote, ...), INTO OUTFILE, more than one statement, a
        statement other than a read for a read-only role; a malformed one gets ClickHouse's own syntax error."""
        tables, every, _ = self.catalogue(engine)
        defs = roles.definitions()
        current = database or "default"

        def deny(what: str):
            raise ClickHouseError(497, f"Code: 497. DB::Exception: {role.name}: Not enough privileges: {what}. "
                                       "(ACCESS_DENIED)")  # fmt: skip

        def readable(name: str) -> bool:
            db = name.rpartition(".")[0]
            if db in defs["databases"]:  # a customer's: only the tables its rows can be told apart in
                return role.may_read(name) and role.row_filter(tables.get(name, set())) != "0"
            return (db == "system" or db.lower() == "information_schema") and role.may_read_catalogue(name)

        statement = sql
        with engine.read.connection(engine.read.timeout) as conn:
            formatted = json.loads(
                conn.run(f"SELECT formatQuerySingleLine({roles.quote(statement)})", "JSONCompact", {}, None).bytes()
            )["data"][0][0]
            if re.search(r"\bINTO\s+OUTFILE\b", formatted, re.I):
                deny("INTO OUTFILE")
            if data is not None:
                ast = ""
            else:
                ast = conn.run(f"EXPLAIN AST {formatted}", "TabSeparatedRaw", {}, params or None).bytes().decode()
        lines = [AST_LINE_RE.match(line).groups() for line in ast.splitlines() if AST_LINE_RE.match(line)]
        kind = lines[0][1] if lines else "InsertQuery"
        target = TARGET_RE.match(formatted)
        reading = kind.startswith(("Select", "Explain", "Show", "Describe", "Exists"))
        if role.readonly and not reading:
            raise readonly_error(role)
        if kind.startswith("Explain") and role.withheld:  # a customer's role: the catalogue's sizes are withheld too
            deny("EXPLAIN (its estimates, parts and ranges count every customer's rows)")
        if kind in ("InsertQuery", "AlterQuery", "CreateQuery", "DropQuery"):
            if not target:
                deny(formatted[:60])
            name = target.group(1).replace("`", "")
            name = name if "." in name else f"{current}.{name}"
            # a table is created and dropped only where the role's names end with `*` (a refresh's scratch tables)
            patterns = [p for p in role.writes if p.endswith("*") or kind in ("InsertQuery", "AlterQuery")]
            if not roles._matches(name, patterns):
                deny(f"to {kind[:-5].upper()} {name}")
        elif not reading:
            deny(kind)
        parents: list[tuple[int, str, str]] = []
        for indent, node, name in lines:
            while parents and parents[-1][0] >= len(indent):
                parents.pop()
            parent = parents[-1][1] if parents else ""
            under_in = any(n == "Function" and IN_RE.match(f or "") for _, n, f in parents)
            parents.append((len(indent), node, name))
            if node == "Identifier" and name and ("." in name or under_in):
                # a table as the set of IN (`x IN sanlens.deadletter`): read like one
                full = name.replace("`", "") if "." in name else f"{current}.{name}"
                if full in every and not readable(full):
                    deny(f"to read {full}")
            if node == "Function" and name:
                if parent == "TableExpression" and name.lower() not in TABLE_FUNCTIONS:
                    deny(f"table function {name}")
                if DENIED_FUNCTION_RE.match(name):
                    deny(f"function {name}")
            elif node == "TableIdentifier" and name:
                full = name.replace("`", "")
                if "." not in full:
                    if f"{current}.{full}" not in every:
                        continue  # a WITH name, or no such table (ClickHouse says so)
                    full = f"{current}.{full}"
                if not readable(full) and not (kind == "InsertQuery" or role.may_write(full) and not role.readonly):
                    deny(f"to read {full}")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sanlens-embedded-clickhouse"
    sys_version = ""  # the Server header names no Python version
    engine: Engine
    credentials: tuple[str, str] | None = None  # the admin's
    max_request_size = 1 << 30
    timeout = 60  # seconds a client may send nothing in the middle of a request (the socket's timeout)
    passwords: Path | None = None  # every user's (clickhouse/roles.py)

    def log_message(self, fmt, *args):  # access logs would drown the stack's log file
        pass

    def do_GET(self):
        path = urlsplit(self.path).path
        if path in ("/ping", "/"):
            params = dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))
            if path == "/ping" or "query" not in params:
                return self._reply(200, b"Ok.\n", {"Content-Type": "text/plain; charset=UTF-8"})
        return self._handle(b"")

    def do_POST(self):
        try:
            body = self._read_body()
        except ClickHouseError as err:
            self.close_connection = True  # the rest of the body is not read: the connection cannot serve another
            return self._error(err)
        except (TimeoutError, ValueError, OSError) as exc:
            self.close_connection = True
            slow = isinstance(exc, TimeoutError)
            print(f"{'slow' if slow else 'bad'} request from {self.client_address[0]}: {exc}", flush=True)
            return self._error(
                ClickHouseError(
                    209,
                    f"Code: 209. DB::Exception: Timeout exceeded while reading from socket "
                    f"({self.timeout:g} s). (SOCKET_TIMEOUT)",
                )  # fmt: skip
                if slow
                else ClickHouseError(
                    33, f"Code: 33. DB::Exception: Cannot read the request's body: {exc}. (CANNOT_READ_ALL_DATA)"
                )  # fmt: skip
            )
        return self._handle(body)

    def _read_body(self) -> bytes:
        """The body, up to max_request_size bytes (more is refused before it is read); a client that sends nothing
        for `timeout` seconds is dropped (socket timeout), so a slow one holds a thread, never the server."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                self._check_size(total)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = int(self.headers.get("Content-Length") or 0)
        self._check_size(length)
        body = self.rfile.read(length)
        if len(body) < length:
            raise ValueError(f"{len(body)} of {length} bytes")
        return body

    def _check_size(self, size: int) -> None:
        if size > self.max_request_size:
            print(f"request of {size:,} bytes refused from {self.client_address[0]}", flush=True)
            raise ClickHouseError(
                36,
                f"Code: 36. DB::Exception: The request's body is {size:,} bytes, over the server's limit of "
                f"{self.max_request_size:,} (--max-request-size). (BAD_ARGUMENTS)",
                status=413,
            )

    def _error(self, err: ClickHouseError) -> None:
        text = f"{err} (version {self.engine.version})\n".encode()
        headers = {"X-ClickHouse-Exception-Code": str(err.code), "Content-Type": "text/plain; charset=UTF-8"}
        if self.close_connection:
            headers["Connection"] = "close"
        self._reply(err.status, text, headers)

    def _authenticate(self, params: dict) -> roles.Role | None:
        """The request's user, from its Basic auth, X-ClickHouse-User/Key headers or user/password parameters,
        checked against the admin's credentials and the passwords file: its role, or None for the admin. A failed
        login is refused with ClickHouse's answer and logged with the client's address."""
        user, password = params.get("user"), params.get("password")
        if self.headers.get("X-ClickHouse-User"):
            user, password = self.headers["X-ClickHouse-User"], self.headers.get("X-ClickHouse-Key", "")
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            with contextlib.suppress(ValueError):
                user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
        user = user or "default"
        if self.credentials is None and self.passwords is None:
            return None  # started with --no-auth
        known = dict(roles.read_passwords(self.passwords)) if self.passwords else {}
        if self.credentials:
            known[self.credentials[0]] = self.credentials[1]
        expected = known.get(user)
        role = None
        if expected is not None and hmac.compare_digest((password or "").encode(), expected.encode()):
            if self.credentials and user == self.credentials[0]:
                return None
            role = self.engine.access.role(self.engine, user)
            if role is not None or user == roles.admin():
                return role
        print(f"failed login: user {user!r} from {self.client_address[0]}:{self.client_address[1]}", flush=True)
        raise ClickHouseError(
            516,
            f"Code: 516. DB::Exception: {user}: Authentication failed: "
            "password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED)",
        )

    def _handle(self, raw: bytes) -> None:
        params = dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))
        query_id = params.get("query_id") or str(uuid.uuid4())
        fmt = params.get("default_format") or self.headers.get("X-ClickHouse-Format") or "TabSeparated"
        headers = {
            "X-ClickHouse-Query-Id": query_id,
            "X-ClickHouse-Timezone": "UTC",
            "X-ClickHouse-Server-Display-Name": "sanlens-embedded",
        }
        try:
            role = self._authenticate(params)
            body = decompress(raw, self.headers.get("Content-Encoding", ""))
            content_type = self.headers.get("Content-Type", "")
            if content_type.startswith("multipart/form-data"):
                # Query and parameters as form fields, as clients send them when the URL would be too long.
                params.update(form_fields(content_type, body))
                body = b""
            sql, data = split_query(params.get("query"), body)
            if not sql.strip():
                raise ClickHouseError(62, "Code: 62. DB::Exception: Empty query. (SYNTAX_ERROR)")
            settings = {
                k: sql_literal(v) for k, v in params.items() if k not in TRANSPORT_PARAMS and not k.startswith("param_")
            }
            query_params = {k[6:]: v for k, v in params.items() if k.startswith("param_")}
            database = params.get("database") or self.headers.get("X-ClickHouse-Database")
            result = self.engine.execute(
                sql, fmt, settings, query_params, params.get("session_id"), database, data, role
            )
        except (ClickHouseError, UnicodeDecodeError, ValueError, OSError, EOFError, zlib.error) as exc:
            # a malformed request (a body that does not decode, a broken form) is answered, never the end of a thread
            err = exc
            if not isinstance(exc, ClickHouseError):
                text = f"Code: 27. DB::Exception: Cannot parse the request: {exc}. (CANNOT_PARSE_INPUT)"
                err = ClickHouseError(27, text)
            text = f"{err} (version {self.engine.version})\n".encode()
            headers.update({"X-ClickHouse-Exception-Code": str(err.code), "Content-Type": "text/plain; charset=UTF-8"})
            return self._reply(err.status, text, headers)
        out = result.bytes() if result is not None else b""
        summary = {
            "read_rows": str(result.rows_read() if result else 0),
            "read_bytes": str(result.bytes_read() if result else 0),
            "written_rows": str(result.rows_written() if result else 0),
            "written_bytes": str(result.bytes_written() if result else 0),
            "total_rows_to_read": "0",
            "result_rows": "0",
            "result_bytes": str(len(out)),
        }
        headers.update(
            {
                "X-ClickHouse-Format": fmt,
                "X-ClickHouse-Summary": json.dumps(summary),
                "Content-Type": "text/plain; charset=UTF-8",
            }
        )
        self._reply(200, out, headers)

    def _reply(self, status: int, body: bytes, headers: dict) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def form_fields(content_type: str, body: bytes) -> dict[str, str]:
    """The fields of a multipart/form-data body (the query, param_*); an uploaded file (external data)
    is refused as the server does not support it."""
    message = email.message_from_bytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body,
                                       policy=email.policy.HTTP)  # fmt: skip
    fields = {}
    for part in message.iter_parts():
        if part.get_filename():
            raise ClickHouseError(48, "Code: 48. DB::Exception: External data is not supported by the embedded "
                                      "server. (NOT_IMPLEMENTED)")  # fmt: skip
        fields[part.get_param("name", header="content-disposition")] = part.get_payload(decode=True).decode()
    return fields


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", required=True, help="database folder (one process may open it)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=settings.port("CLICKHOUSE"))
    ap.add_argument("--user", default=os.environ.get("SANLENS_CLICKHOUSE_USER"), help="the admin (default sanlens)")
    ap.add_argument("--password", default=os.environ.get("SANLENS_CLICKHOUSE_PASSWORD"), help="the admin's")
    ap.add_argument(
        "--passwords",
        type=Path,
        default=settings.CLICKHOUSE_PASSWORDS,
        help="every user's password, made on first use (clickhouse/roles.py); default %(default)s",
    )
    ap.add_argument("--no-auth", action="store_true", help="accept every request as the admin (never the stack's)")
    ap.add_argument("--max-request-size", type=parse_size, default=parse_size("1Gi"), help="bytes; 1Gi")
    ap.add_argument("--client-timeout", type=float, default=60, help="seconds a client may send nothing; 60")
    group = ap.add_argument_group("limits", "each default can also be set by $SANLENS_CLICKHOUSE_<NAME>")
    for name, default, kind, what in (
        ("readers", "8", int, "engine connections for reads: as many run at once, the next ones wait their turn"),
        ("writers", "4", int, "engine connections for writes (inserts, DDL, INSERT ... SELECT), never taken by reads"),
        ("max-execution-time", "30", parse_size, "seconds a read may run unless it asks for more, up to the cap"),
        ("max-memory-usage", "2G", parse_size, "bytes a read may use unless it asks for more, up to the cap"),
        ("max-execution-time-cap", "600", parse_size, "the most seconds a query may ask for; what a write gets"),
        ("max-memory-usage-cap", "8G", parse_size, "the most bytes a query may ask for; what a write gets"),
        ("max-server-memory-usage", "", parse_size, "bytes all queries together may use; chdb's default: 90%% of RAM"),
    ):
        value = os.environ.get("SANLENS_CLICKHOUSE_" + name.upper().replace("-", "_"), default)
        group.add_argument(
            f"--{name}",
            type=kind,
            default=kind(value) if value else None,
            help=f"{what}" + (f"; {default}" if default else ""),
        )
    args = ap.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        ap.error("the embedded server listens on loopback only")
    caps = Limits(args.max_execution_time, int(args.max_memory_usage), args.max_execution_time_cap,
                  int(args.max_memory_usage_cap))  # fmt: skip
    if caps.timeout > caps.timeout_cap or caps.memory > caps.memory_cap:
        ap.error("a default limit is above its cap")
    Handler.engine = Engine(args.path, args.readers, args.writers, caps, args.max_server_memory_usage)
    if args.no_auth:
        Handler.credentials = Handler.passwords = None
    else:
        passwords = roles.ensure_passwords(roles.local_users(), args.passwords)
        admin = args.user or roles.admin()
        Handler.credentials = (admin, args.password or passwords.get(admin, ""))
        Handler.passwords = args.passwords
    Handler.max_request_size, Handler.timeout = int(args.max_request_size), args.client_timeout
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(
        f"embedded ClickHouse {Handler.engine.version} on http://{args.host}:{args.port} (data {args.path}; "
        f"{args.readers} readers, {args.writers} writers; a read {caps.timeout:g} s and {caps.memory:,} bytes "
        f"unless it asks for more, up to {caps.timeout_cap:g} s and {caps.memory_cap:,})",
        flush=True,
    )
    server.serve_forever()
    server.server_close()
    Handler.engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

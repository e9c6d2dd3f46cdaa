"""The embedded ClickHouse server, tested through clickhouse-connect and plain HTTP like a real server."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import urllib.error
import urllib.request
from decimal import Decimal

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from tests.support import authorized

UTC = dt.UTC
pytestmark = pytest.mark.stack  # every test here starts an embedded ClickHouse server process


def test_every_type_the_project_uses_round_trips(embedded):
    c = embedded.client()
    c.command("CREATE DATABASE IF NOT EXISTS t")
    c.command("""CREATE TABLE t.types (
        ts DateTime64(3, 'UTC'), d DateTime('UTC'), lc LowCardinality(String), n Nullable(Float64),
        a Array(UInt32), m Map(LowCardinality(String), String), e Enum8('read' = 1, 'write' = 2),
        u UInt64, dec Decimal(18, 6), s String) ENGINE = MergeTree ORDER BY ts""")
    rows = [
        [
            dt.datetime(2026, 11, 22, 1, 2, 3, 456000, tzinfo=UTC),
            dt.datetime(2026, 1, 1, tzinfo=UTC),
            "array-01",
            None,
            [1, 2, 3],
            {"site": "ams", "tier": "0"},
            "write",
            2**63 + 5,
            Decimal("0.125000"),
            "Ünïcode ✓",
        ],
        [
            dt.datetime(1999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
            dt.datetime(2030, 6, 1, tzinfo=UTC),
            "",
            1.5e-6,
            [],
            {},
            "read",
            0,
            Decimal("-1.5"),
            "",
        ],
    ]
    c.insert("t.types", rows, column_names=["ts", "d", "lc", "n", "a", "m", "e", "u", "dec", "s"])
    got = c.query("SELECT * FROM t.types ORDER BY ts DESC").result_rows
    assert len(got) == 2
    for want, have in zip(rows, got):
        assert have[0].replace(tzinfo=UTC) == want[0] and have[1].replace(tzinfo=UTC) == want[1]
        assert list(have[2:]) == want[2:]
    meta = c.query("SELECT * FROM t.types LIMIT 0").column_types
    assert [t.name for t in meta][:7] == [
        "DateTime64(3, 'UTC')",
        "DateTime('UTC')",
        "LowCardinality(String)",
        "Nullable(Float64)",
        "Array(UInt32)",
        "Map(LowCardinality(String), String)",
        "Enum8('read' = 1, 'write' = 2)",
    ]


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_compressed_insert_of_two_million_rows_in_many_blocks_arrives_exactly(embedded, codec):
    c = embedded.client(compress=codec)
    c.command("CREATE TABLE big (id UInt64, host LowCardinality(String), v Float64) ENGINE = MergeTree ORDER BY id")
    n = 2_000_000  # clickhouse-connect streams ~2 MB blocks (about 16 here), each its own compressed frame
    ids = list(range(n))
    hosts = [f"h{i % 97}" for i in range(n)]
    values = [i * 0.5 for i in range(n)]
    c.insert("big", [ids, hosts, values], column_names=["id", "host", "v"], column_oriented=True)
    count, total, distinct = c.query("SELECT count(), sum(id), uniqExact(host) FROM big").result_rows[0]
    assert (count, total, distinct) == (n, n * (n - 1) // 2, 97)


def test_eight_concurrent_clients_inserting_and_querying_lose_nothing(embedded):
    embedded.client().command("CREATE TABLE conc (client UInt8, i UInt32) ENGINE = MergeTree ORDER BY (client, i)")
    errors = []

    def work(k: int) -> None:
        try:
            c = embedded.client()
            for batch in range(20):
                c.insert("conc", [[k, batch * 100 + i] for i in range(100)], column_names=["client", "i"])
                seen = c.command(f"SELECT count() FROM conc WHERE client = {k}")
                assert seen == (batch + 1) * 100, (k, batch, seen)
        except Exception as exc:  # collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    rows = (
        embedded.client()
        .query("SELECT client, count(), uniqExact(i) FROM conc GROUP BY client ORDER BY client")
        .result_rows
    )
    assert rows == [(k, 2000, 2000) for k in range(8)]


def test_parameters_sessions_and_settings(embedded):
    a = embedded.client()
    b = embedded.client()
    assert a.query("SELECT {x:UInt32} * 2, {s:String}", parameters={"x": 21, "s": "o'k"}).result_rows == [(42, "o'k")]
    assert a.command("SELECT getSetting('max_block_size')", settings={"max_block_size": 777}) == 777
    a.command("SET max_block_size = 4321")
    assert a.command("SELECT getSetting('max_block_size')") == 4321  # same session keeps it
    assert b.command("SELECT getSetting('max_block_size')") != 4321  # another session does not see it
    with pytest.raises(DatabaseError):
        a.command("SET no_such_setting = 1")


def test_parameters_too_long_for_a_url_arrive_as_form_fields(embedded):
    """clickhouse-connect sends the query and its parameters as multipart/form-data when the URL would be
    too long (a list of 200 host names, say), as the real server accepts them."""
    names = [f"site-af{i:03d}-sql1" for i in range(2000)]
    sql = "SELECT count() FROM numbers(10) WHERE toString(number) IN {names:Array(String)} AND number > {low:UInt8}"
    assert embedded.client().command(sql, parameters={"names": [*names, "3", "7"], "low": 5}) == 1


def test_errors_come_back_as_clickhouse_sends_them(embedded):
    req = authorized(embedded.url + "/", data=b"SELECT * FROM no_such_table")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=10)
    err = info.value
    body = err.read().decode()
    assert err.code == 404
    assert err.headers["X-ClickHouse-Exception-Code"] == "60"
    assert body.startswith("Code: 60. DB::Exception:") and "(UNKNOWN_TABLE)" in body
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(authorized(embedded.url + "/", data=b"SELEC 1"), timeout=10)
    assert info.value.code == 400 and info.value.headers["X-ClickHouse-Exception-Code"] == "62"
    with pytest.raises(DatabaseError, match="Code: 81"):
        embedded.client().query("SELECT 1 FROM missing.table_x")


def test_curl_style_requests(embedded):
    def post(query: str, body: bytes = b"") -> str:
        url = embedded.url + "/?" + urllib.parse.urlencode({"query": query}) if body else embedded.url + "/"
        with urllib.request.urlopen(authorized(url, data=body or query.encode()), timeout=10) as r:
            return r.read().decode()

    import urllib.parse

    assert urllib.request.urlopen(embedded.url + "/ping").read() == b"Ok.\n"
    post("CREATE TABLE j (a UInt8, s String) ENGINE = MergeTree ORDER BY a")
    post("INSERT INTO j FORMAT JSONEachRow", b'{"a": 1, "s": "x"}\n{"a": 2, "s": "y"}\n')
    post("INSERT INTO j VALUES (3, 'z')")
    assert json.loads(post("SELECT sum(a) AS s FROM j FORMAT JSON"))["data"] == [{"s": 6}]


def test_authentication_when_a_password_is_set(tmp_path):
    from tests.support import EmbeddedServer

    server = EmbeddedServer(tmp_path / "auth", extra=["--user", "sanlens", "--password", "s3cret"]).start()
    try:
        from sanlensctl import db

        assert db.client(f"http://sanlens:s3cret@127.0.0.1:{server.port}").command("SELECT 1") == 1
        with pytest.raises(Exception, match="516"):
            db.client(f"http://sanlens:wrong@127.0.0.1:{server.port}").command("SELECT 1")
    finally:
        server.stop()


@pytest.mark.parametrize("kill", [False, True], ids=["restart", "kill-9"])
def test_data_survives_a_restart_and_a_kill_9(tmp_path, kill):
    from tests.support import EmbeddedServer

    server = EmbeddedServer(tmp_path / "durable").start()
    c = server.client()
    c.command("CREATE DATABASE d")
    c.command("CREATE TABLE d.t (i UInt32) ENGINE = MergeTree ORDER BY i")
    c.command("CREATE TABLE d.agg (k UInt8, n AggregateFunction(count)) ENGINE = AggregatingMergeTree ORDER BY k")
    c.command("CREATE MATERIALIZED VIEW d.mv TO d.agg AS SELECT i % 2 AS k, countState() AS n FROM d.t GROUP BY k")
    c.insert("d.t", [[i] for i in range(10_000)], column_names=["i"])
    server.stop(kill=kill)
    server.start()
    c = server.client()
    assert c.command("SELECT count() FROM d.t") == 10_000
    assert c.query("SELECT k, countMerge(n) FROM d.agg GROUP BY k ORDER BY k").result_rows == [(0, 5000), (1, 5000)]
    server.stop()


# -- queries in parallel, under limits ---------------------------------------------------------------
def wait_s(seconds: int) -> str:
    """A read that takes `seconds` without using CPU (one row a block, the timeout is checked between blocks)."""
    return f"SELECT sleepEachRow(0.5) FROM numbers({2 * seconds}) SETTINGS max_block_size = 1 FORMAT Null"


def post(url: str, sql: str, **params) -> tuple[int, dict, str]:
    """Status, headers and body of one request, errors included."""
    import urllib.parse

    query = ("?" + urllib.parse.urlencode(params)) if params else ""
    try:
        with urllib.request.urlopen(authorized(url + "/" + query, data=sql.encode()), timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()


def in_thread(fn, *args) -> threading.Thread:
    thread = threading.Thread(target=fn, args=args)
    thread.start()
    return thread


def test_reads_get_the_default_limits_and_writes_the_caps(embedded):
    c = embedded.client()
    assert c.query("SELECT getSetting('max_execution_time'), getSetting('max_memory_usage')").result_rows == [
        (30, 2_000_000_000)
    ]
    c.command("CREATE TABLE lim (t Float64, m UInt64) ENGINE = MergeTree ORDER BY t")
    c.command("INSERT INTO lim SELECT getSetting('max_execution_time'), getSetting('max_memory_usage')")
    assert c.query("SELECT * FROM lim").result_rows == [(600, 8_000_000_000)]
    assert c.command("SELECT getSetting('max_execution_time')", settings={"max_execution_time": 90}) == 90
    assert c.command("SELECT getSetting('max_execution_time')") == 30  # only for that query


def test_a_query_over_its_timeout_gets_clickhouse_s_timeout_error_and_the_next_one_runs(tmp_path):
    from tests.support import EmbeddedServer

    server = EmbeddedServer(tmp_path / "t", extra=["--max-execution-time", "1"]).start()
    try:
        t = time.monotonic()
        status, headers, body = post(server.url, wait_s(5))
        assert time.monotonic() - t < 4, "the query ran past its timeout"
        assert (status, headers["X-ClickHouse-Exception-Code"]) == (504, "159"), body
        assert body.startswith("Code: 159. DB::Exception: Timeout exceeded") and "(TIMEOUT_EXCEEDED)" in body
        assert server.client().command("SELECT 1") == 1
        assert post(server.url, wait_s(2), max_execution_time="10")[0] == 200  # a request may ask for more
        for asked in ("0", "601"):  # no limit, or above the cap: refused as a settings constraint is
            status, headers, body = post(server.url, "SELECT 1", max_execution_time=asked)
            assert (status, headers["X-ClickHouse-Exception-Code"]) == (400, "452"), body
        status, _, body = post(server.url, "SELECT 1 SETTINGS max_execution_time = 0")
        assert status == 400 and "SETTING_CONSTRAINT_VIOLATION" in body
        with pytest.raises(DatabaseError, match="452"):
            server.client().command("SET max_memory_usage = 0")
    finally:
        server.stop()


def test_a_query_over_its_memory_limit_fails_cleanly_and_the_server_stays_up(tmp_path):
    from tests.support import EmbeddedServer

    server = EmbeddedServer(tmp_path / "m", extra=["--max-memory-usage", "100M"]).start()
    try:
        status, headers, body = post(server.url, "SELECT groupArray(number) FROM numbers(100000000) FORMAT Null")
        assert (status, headers["X-ClickHouse-Exception-Code"]) == (500, "241"), body
        assert "(MEMORY_LIMIT_EXCEEDED)" in body
        assert server.proc.poll() is None
        assert server.client().command("SELECT count() FROM numbers(1000)") == 1000
    finally:
        server.stop()


def test_an_insert_during_slow_reads_does_not_wait_for_them(embedded):
    """Two CPU-bound reads of 10 s keep both cores busy; an insert meanwhile takes its own connection and
    completes within a few seconds, while the reads still run (one engine session made it wait 10 s)."""
    c = embedded.client()
    c.command("CREATE TABLE ins (i UInt32) ENGINE = MergeTree ORDER BY i")
    slow = "SELECT sum(cityHash64(number)) FROM numbers(1000000000000) SETTINGS max_execution_time = 10, "
    slow += "timeout_overflow_mode = 'break' FORMAT Null"
    reads = [in_thread(post, embedded.url, slow) for _ in range(2)]
    time.sleep(1)
    t = time.monotonic()
    c.insert("ins", [[i] for i in range(10_000)], column_names=["i"])
    took = time.monotonic() - t
    assert all(r.is_alive() for r in reads), "the reads ended before the insert: nothing was measured"
    assert took < 5, f"the insert took {took:.1f} s behind the reads"
    assert c.command("SELECT count() FROM ins") == 10_000
    for r in reads:
        r.join(30)


def test_reads_run_in_parallel_and_wait_their_turn_beyond_the_readers(tmp_path):
    from tests.support import EmbeddedServer

    server = EmbeddedServer(tmp_path / "p", extra=["--readers", "4"]).start()
    try:
        t = time.monotonic()
        for thread in [in_thread(post, server.url, wait_s(2)) for _ in range(4)]:
            thread.join(30)
        assert time.monotonic() - t < 3.5, "four 2-s reads took longer than two of them: not in parallel"
        t = time.monotonic()
        for thread in [in_thread(post, server.url, wait_s(2)) for _ in range(8)]:
            thread.join(30)
        assert 3.5 < time.monotonic() - t < 6, "eight 2-s reads on four connections: two rounds"
        # a read that cannot get a connection within its own timeout is told so
        busy = [in_thread(post, server.url, wait_s(3)) for _ in range(4)]
        time.sleep(0.5)
        status, headers, body = post(server.url, "SELECT 1", max_execution_time="1")
        assert (status, headers["X-ClickHouse-Exception-Code"]) == (503, "202"), body
        for thread in busy:
            thread.join(30)
        assert server.client().command("SELECT 1") == 1
    finally:
        server.stop()


def test_set_and_use_without_a_session_leave_no_trace_on_the_connections(embedded):
    assert post(embedded.url, "SET max_block_size = 4321")[0] == 200
    assert post(embedded.url, "USE system")[0] == 200
    for _ in range(20):  # every connection of the reads, more than once
        assert post(embedded.url, "SELECT currentDatabase()")[2] == "default\n"
        assert post(embedded.url, "SELECT getSetting('max_block_size')")[2] != "4321\n"


def test_a_long_run_of_spaces_or_comments_before_a_statement_is_routed_at_once(embedded):
    """Which connections a statement runs on is read from its first word; a pattern that backtracked on the
    indentation dbt puts before its models once hung the whole server."""
    t = time.monotonic()
    sql = '/* {"app": "dbt"} */\n' + "-- note\n" * 50 + " " * 100_000 + "\n  CREATE TABLE i (i UInt8) ENGINE = Memory"
    assert post(embedded.url, sql)[0] == 200
    assert post(embedded.url, "/* a */ (( " + " " * 100_000 + "SELECT 1))")[2] == "1\n"
    assert time.monotonic() - t < 10

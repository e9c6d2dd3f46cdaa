"""The embedded ClickHouse server, tested through clickhouse-connect and plain HTTP like a real server."""

from __future__ import annotations

import datetime as dt
import json
import threading
import urllib.error
import urllib.request
from decimal import Decimal

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

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
    req = urllib.request.Request(embedded.url + "/", data=b"SELECT * FROM no_such_table")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=10)
    err = info.value
    body = err.read().decode()
    assert err.code == 404
    assert err.headers["X-ClickHouse-Exception-Code"] == "60"
    assert body.startswith("Code: 60. DB::Exception:") and "(UNKNOWN_TABLE)" in body
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(urllib.request.Request(embedded.url + "/", data=b"SELEC 1"), timeout=10)
    assert info.value.code == 400 and info.value.headers["X-ClickHouse-Exception-Code"] == "62"
    with pytest.raises(DatabaseError, match="Code: 81"):
        embedded.client().query("SELECT 1 FROM missing.table_x")


def test_curl_style_requests(embedded):
    def post(query: str, body: bytes = b"") -> str:
        url = embedded.url + "/?" + urllib.parse.urlencode({"query": query}) if body else embedded.url + "/"
        with urllib.request.urlopen(urllib.request.Request(url, data=body or query.encode()), timeout=10) as r:
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

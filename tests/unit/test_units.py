"""Pure logic, isolated: request-body framing of the embedded server, migration file splitting."""

from __future__ import annotations

import lz4.frame
import zstandard

from clickhouse.embedded import server
from sanlensctl import migrate


def test_every_lz4_and_zstd_frame_of_a_streamed_body_is_read():
    blocks = [bytes([i]) * (1000 + i) for i in range(50)]
    lz4_body = b"".join(lz4.frame.compress(b) for b in blocks)
    zstd_body = b"".join(zstandard.ZstdCompressor().compress(b) for b in blocks)
    assert server.decompress(lz4_body, "lz4") == b"".join(blocks)
    assert server.decompress(zstd_body, "zstd") == b"".join(blocks)


def test_statement_and_data_are_split_like_clickhouse_does():
    body = b"INSERT INTO db.t (a, b) FORMAT Native\n\x00\x01binary\nFORMAT"
    assert server.split_query(None, body) == ("INSERT INTO db.t (a, b) FORMAT Native", b"\x00\x01binary\nFORMAT")
    assert server.split_query(None, b"SELECT 1 FORMAT JSON") == ("SELECT 1 FORMAT JSON", None)
    assert server.split_query("INSERT INTO t FORMAT CSV", b"1,2\n") == ("INSERT INTO t FORMAT CSV", b"1,2\n")
    assert server.split_query(None, b"INSERT INTO t VALUES (1)") == ("INSERT INTO t VALUES (1)", None)


def test_session_settings_parse_with_quoted_commas():
    assert server.parse_assignments("a = 1, b = 'x, y'") == {"a": "1", "b": "'x, y'"}


def test_migration_files_split_into_statements_keeping_semicolons_inside_strings():
    sql = "-- header\nCREATE TABLE a (s String DEFAULT 'x;y');\n\nCREATE VIEW v AS SELECT 1;\n-- trailing\n"
    assert migrate.statements(sql) == [
        "-- header\nCREATE TABLE a (s String DEFAULT 'x;y')",
        "CREATE VIEW v AS SELECT 1",
    ]


def test_migrations_are_numbered_uniquely():
    versions = [v for v, _, _ in migrate.migrations()]
    assert versions == sorted(set(versions)) and versions[0] == 1

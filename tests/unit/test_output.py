"""The command line's tables (sanlensctl/output.py)."""

from __future__ import annotations

import io

from sanlensctl.output import print_rows


def printed(columns, rows) -> str:
    out = io.StringIO()
    print_rows(columns, rows, out=out)
    return out.getvalue()


def test_a_table_has_its_header_its_rows_and_their_count():
    assert printed(["host", "read_us"], [("acme-sql1", 512), ("b", None)]).splitlines() == [
        "host       read_us",
        "---------  -------",
        "acme-sql1  512",
        "b",
        "(2 rows)",
    ]


def test_an_empty_result_without_column_names_prints_only_its_count():
    assert printed([], []) == "(0 rows)\n"

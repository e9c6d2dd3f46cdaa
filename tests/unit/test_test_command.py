"""`./sanlens test` given test files or node ids goes straight to pytest: which of its arguments name tests
(sanlensctl/cli.py)."""

from __future__ import annotations

from sanlensctl import cli
from tests.support import ROOT


def test_test_files_folders_and_node_ids_are_named_and_options_are_not(monkeypatch):
    monkeypatch.chdir(ROOT)  # where ./sanlens runs
    args = ["tests/unit/test_units.py", "tests/unit/test_units.py::test_x", "-k", "micro", "-m", "not stack"]
    assert cli._test_paths([*args, "tests/stack", "tests/test_gone.py", "--keep"]) == [*args[:2], "tests/stack"]

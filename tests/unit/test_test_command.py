"""`./sanlens test` given test files or node ids goes straight to pytest: which of its arguments name tests
(sanlensctl/cli.py); the whole suite's two sides (tests/shards.py) cover the stack tests."""

from __future__ import annotations

from sanlensctl import cli
from tests import shards
from tests.support import ROOT


def test_test_files_folders_and_node_ids_are_named_and_options_are_not(monkeypatch):
    monkeypatch.chdir(ROOT)  # where ./sanlens runs
    args = ["tests/unit/test_units.py", "tests/unit/test_units.py::test_x", "-k", "micro", "-m", "not stack"]
    assert cli._test_paths([*args, "tests/stack", "tests/test_gone.py", "--keep"]) == [*args[:2], "tests/stack"]


def test_unit_tests_alone_are_told_apart_from_those_that_start_a_stack(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli._unit_tests_only(["tests/unit/test_units.py", "tests/unit/test_units.py::test_x", "tests/unit"])
    assert not cli._unit_tests_only(["tests/unit/test_units.py", "tests/stack/test_cli.py"])
    assert not cli._unit_tests_only([])  # the whole suite


def test_every_stack_test_file_is_on_exactly_one_side_of_the_suite_s_run():
    files = {p.name for p in (ROOT / "tests" / "stack").glob("test_*.py")}
    first, second = shards.SIDES
    assert not first & second, first & second
    assert first | second == files, (
        f"on no side: {sorted(files - first - second)}; gone: {sorted(first | second - files)}"
    )

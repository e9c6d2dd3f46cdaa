"""`./sanlens test` given test files or node ids goes straight to pytest: which of its arguments name tests
(sanlensctl/cli.py); the whole suite's two sides (tests/shards.py) cover the stack tests."""

from __future__ import annotations

import pytest

from sanlensctl import cli, config, suite
from sanlensctl.errors import SanlensError
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


def test_each_process_of_the_suite_takes_its_free_ports_from_a_slice_of_its_own(monkeypatch):
    slices = sorted(suite.PORT_SLICES.values())
    assert all(end <= later for (_, end), (later, _) in zip(slices, slices[1:])), slices
    assert set(suite.PORT_SLICES) == {suite.STACKS, "no stack", *suite.SIDES, suite.ALONE}
    monkeypatch.setattr(config, "FREE_PORTS", suite.PORT_SLICES[suite.ALONE])
    first, end = suite.PORT_SLICES[suite.ALONE]
    assert first <= config.free_port_range(20) and config.free_port_range(20) + 20 <= end


def test_a_free_port_is_never_one_of_this_process_s_own_stack(monkeypatch):
    assert {config.KAFKA_PORT, config.CLICKHOUSE_PORT, config.FLINK_REST_PORT + 7} <= config._handed_out
    first = config.free_port_range(5)  # five free ports, the middle three taken to be the stack's
    monkeypatch.setattr(config, "FREE_PORTS", (first, first + 5))
    monkeypatch.setattr(config, "_handed_out", {first + 1, first + 2, first + 3})
    assert {config.free_port(), config.free_port()} == {first, first + 4}
    with pytest.raises(SanlensError, match="no free port"):
        config.free_port()

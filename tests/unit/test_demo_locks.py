"""Two demos on one stack: side by side when their sites differ and at most one plays through Telegraf; else the
second is refused at once, naming what the first holds and its pid."""

from __future__ import annotations

import os

import pytest

from sanlensctl import config, demo
from sanlensctl.errors import SanlensError


@pytest.fixture(autouse=True)
def run_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "RUN", tmp_path)


def test_a_demo_of_a_site_another_demo_plays_is_refused_with_the_site_and_the_pid():
    first = demo._hold(["acme-east", "globex-west"], live=False)
    with pytest.raises(SanlensError, match=rf"demo \(pid {os.getpid()}\) is playing site globex-west on this stack"):
        demo._hold(["globex-west", "initech-north"], live=False)
    for lock in first:
        lock.close()
    assert len(demo._hold(["globex-west", "initech-north"], live=False)) == 2


def test_a_refused_demo_holds_none_of_its_sites():
    first = demo._hold(["b"], live=False)
    with pytest.raises(SanlensError):
        demo._hold(["a", "b"], live=False)
    assert demo._hold(["a"], live=False)
    del first


def test_demos_of_other_sites_play_side_by_side_but_one_at_a_time_through_telegraf():
    backfills = [demo._hold(["a"], live=False), demo._hold(["b"], live=False)]
    live = demo._hold(["c"], live=True)
    with pytest.raises(SanlensError, match="is playing through this stack's Telegraf"):
        demo._hold(["d"], live=True)
    assert backfills and live


def test_a_site_with_a_slash_in_its_name_is_one_lock_file(tmp_path):
    held = demo._hold(["emea/lon-1"], live=False)
    assert [p.name for p in (tmp_path / "demo-locks").iterdir()] == ["site-emea%2Flon-1.lock"] and held

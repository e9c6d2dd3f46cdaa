"""Each top-level folder of the project opens with a README saying what it is and what flows in and out, as
Telegraf's plugin folders do."""

from __future__ import annotations

import subprocess

from tests.support import ROOT


def test_every_top_level_folder_has_a_readme():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    folders = {line.split("/")[0] for line in tracked.splitlines() if "/" in line and not line.startswith(".")}
    assert folders >= {"ingest", "queries", "sanlensctl", "tests"}, folders
    missing = sorted(f for f in folders if not (ROOT / f / "README.md").is_file())
    assert not missing, f"no README.md in: {', '.join(missing)}"

"""./sanlens demo, the main job, on the running stack: the default scenario through Telegraf, its
progress lines, and the accounting it prints; a bad scenario file is a one-line error."""
from __future__ import annotations

import re

from conftest import ROOT, sanlens


def test_demo_plays_the_default_scenario_end_to_end_and_reports_progress(stack):
    out = sanlens("demo", "--duration", "25", "--speed", "40", timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "playing scenario demo (4 arrays, 5 SQL Server hosts, 2 switches) for 25 s at 40x" in text
    progress = re.findall(r"metrics in +([\d,]+)/s +windows out +(\d+) +lag normalize +(\d+) +histograms +(\d+) +loader +(\d+)", text)
    assert len(progress) >= 3 and max(int(p[0].replace(",", "")) for p in progress) > 0
    accounting = dict(re.findall(r"^records +(in|out|deadletter) .*?(\d+)$", text, re.M))
    assert int(accounting["in"]) > 0 and accounting["in"] == accounting["out"]
    assert (ROOT / ".sanlens" / "run" / "simulator" / "demo" / "events.jsonl").exists()


def test_demo_with_a_broken_scenario_says_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "ingest" / "scenarios" / "demo.yaml").read_text().replace("type: slow_drain", "type: slow"))
    out = sanlens("demo", "--scenario", str(bad))
    assert out.returncode != 0 and "unknown event type 'slow'" in out.stderr and out.stderr.count("\n") == 1

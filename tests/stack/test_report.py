"""./sanlens report on real pipeline data: the HTML opens in headless Chromium (Debian's chromium) and
its charts render, and every chart has a PNG that is not blank."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import datetime, timedelta

from PIL import Image, ImageStat

from ingest import topics
from queries.tiers import FULLEST_ARRAYS
from sanlensctl import report, tier_charts
from sanlensctl.report import NO_SLO_WINDOWS, with_gaps
from tests.support import printed_tables, sanlens, wait_for_job
from tests.tiering_truth import effects_of


def fullest_arrays(ch) -> list[str]:
    """The fleet's fullest hybrid arrays, as the store ranks them now."""
    return sorted(a for a, *_ in ch.query(FULLEST_ARRAYS, parameters={"top": tier_charts.ARRAYS}).result_rows)


TITLES = [
    "Install base: write service times by array model and firmware",
    "Install base: read service times by array model and firmware",
    "per cohort, weighted by I/O and by array",  # the cohorts' share of I/Os <= 0.125 ms
    "Upgrade effect: change in the share of I/Os",
    "volumes by p99 write service time",
    "Tier migration effects: change after - before",
    "error budget left per entity over the last",  # a latency SLO's chart
]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=15000",
]


def not_blank(path) -> bool:
    image = Image.open(path).convert("L")
    extrema = image.getextrema()
    return extrema[1] - extrema[0] > 100 and ImageStat.Stat(image).stddev[0] > 5


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is not installed: ./sanlens test installs it"
    return subprocess.run(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_report_renders_in_headless_chromium(rollout, breakdown_played, demo_played, ch, tmp_path):
    """With the rollout's install base, the breakdown scenario's incidents and the demo's auto-tiering: the
    install-base charts, a breakdown chart for each of the two hosts the incidents touched (a slow drain, an
    HBA saturation), the incident list, the Tier 0 share of each volume with a tier migration (the demo's
    among them) and what the migrations did; and the latency SLOs of the all-flash paths these scenarios
    played (the burn_rates job judges every path): the error budget left per SLO and entity, and the alerts."""
    marts = ("+latency_breakdown", "+latency_incidents", "+tier0_fullness", "+tier_performance")
    assert sanlens("dbt", "build", "--select", *marts).returncode == 0
    wait_for_job("burn_rates", [topics.HISTOGRAMS, topics.BREAKDOWN], [topics.SLO_WINDOWS, topics.SLO_ALERTS])
    (episode,), _ = effects_of(ch, demo_played.scenario, demo_played.run, demo_played.sites)
    out = tmp_path / "report"
    fullest = [fullest_arrays(ch)]  # before and after the report: tests beside this one may add hybrids meanwhile
    result = sanlens("report", "--out", str(out), "--hosts", "2")
    fullest.append(fullest_arrays(ch))
    assert result.returncode == 0, result.stdout + result.stderr
    html = (out / "index.html").read_text()
    assert "<script" in html and not re.search(r"<(script|link)[^>]+(src|href)=\"https?:", html)  # self-contained
    pngs = sorted(out.glob("*.png"))
    names = [p.stem for p in pngs]
    tiering = [n for n in names if n.startswith("tier-")]
    tiers = [n for n in names if n.startswith("tiers-")]
    latency_slos = [n for n in names if n.startswith("slo-")]
    # the install base's 6 (histograms of writes and reads, cohorts, the upgrade effect on each share, top volumes),
    # 2 hosts' breakdowns, 2 load curves (arrays, hosts)
    assert len(pngs) == 10 + len(tiering) + len(tiers) + len(latency_slos) and all(not_blank(p) for p in pngs)
    assert {"load-curves", "load-curves-hosts"} <= set(names)
    assert {"slo-flash-reads", "slo-flash-writes"} <= set(latency_slos)
    assert len([n for n in names if n.startswith("breakdown-")]) == 2
    assert {f"tier-share-{episode['array']}-{episode['volume']}", "tier-migration-effects"} <= set(tiering)
    # the fleet's fullest hybrid arrays: on the shared stack other tests' hybrids may rank before the demo's
    charted = [arrays for arrays in fullest if sorted(report.file_name(f"tiers-{a}") for a in arrays) == sorted(tiers)]
    assert charted, (tiers, fullest)
    fullest = charted[0]
    demo_hybrid = {"a": episode["array"]}  # it reported its tiers, whether or not it ranks
    assert ch.command("SELECT count() FROM sanlens_marts.tier0_fullness WHERE array = {a:String}", demo_hybrid) > 0

    dom = chromium(tmp_path, "--dump-dom", (out / "index.html").as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('class="main-svg"') >= 2 * len(pngs)  # plotly drew every chart
    for title in TITLES:
        assert title in dom.stdout, f"chart {title!r} did not render"
    assert len(re.findall(r"Where the latency of [^<]+ goes, per minute", dom.stdout)) >= 2
    assert "<th>array-weighted</th>" in dom.stdout and "<th>busiest array (its part of the I/Os)</th>" in dom.stdout
    assert "<h2>Incidents</h2>" in dom.stdout and "fabric</td>" in dom.stdout
    assert f"Tier 0 share of {episode['array']} / {episode['volume']}, its tier migrations shaded" in dom.stdout
    assert "<h2>Tiers</h2>" in dom.stdout and all(f"Tiers of {a}" in dom.stdout for a in fullest)
    # the demo's auto-tiering fills its hybrid array's Tier 0 (230 GiB) past the warning level
    assert (
        ch.command("SELECT countIf(warning) FROM sanlens_marts.tier0_fullness WHERE array = {a:String}", demo_hybrid)
        > 0
    )
    if episode["array"] in fullest:
        assert f"Tiers of {episode['array']}: Tier 0 past its warning level" in dom.stdout
    assert "<h2>Latency SLOs</h2>" in dom.stdout and NO_SLO_WINDOWS not in dom.stdout
    assert "<th>peak burn 1h</th>" in dom.stdout or "No SLO alert has fired" in dom.stdout  # the alert history
    assert "<th>volumes</th>" in dom.stdout and "Severity, after Brocade MAPS FPI" in dom.stdout  # the incidents
    slo_says_the_same(html)

    shot = tmp_path / "page.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,2400", (out / "index.html").as_uri())
    assert shot.exists() and not_blank(shot)


def chart_budgets(html: str, slo: str) -> dict[str, str]:
    """Entity -> the budget left the report's chart of the SLO shows (the text of its bar)."""
    section = html.split(f'<section id="slo-{slo}">')[1]
    start = re.search(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", section).end()
    [bars], _ = json.JSONDecoder().raw_decode(section, start)
    return {label.rsplit(" (", 1)[0]: text.split("%")[0] + "%" for label, text in zip(bars["y"], bars["text"])}


def slo_says_the_same(html: str) -> None:
    """./sanlens slo prints, entity for entity, the budget left the report charts (one query, the same words), and
    names a path host:D, without a stray colon."""
    out = sanlens("slo")
    assert out.returncode == 0, out.stdout + out.stderr
    tables = printed_tables(out.stdout)
    for slo in ("flash-reads", "flash-writes"):
        [rows] = [rows for title, rows in tables.items() if title.startswith(f"{slo}: ")]
        printed = {r["entity"]: r["budget left"] for r in rows}
        assert printed and chart_budgets(html, slo) == printed, (slo, out.stdout)
        assert not [e for e in printed if e.endswith(":")], printed


def test_a_breakdown_line_is_not_drawn_across_hours_without_data():
    minute, t = timedelta(minutes=1), datetime(2026, 11, 27, 23, 9)
    rows = [{"period_start": t, "fabric_us": 5.0}, {"period_start": t + 3 * 60 * minute, "fabric_us": 7.0}]
    assert [(r["period_start"] - t, r["fabric_us"]) for r in with_gaps(rows, minute)] == [
        (0 * minute, 5.0),
        (minute, None),
        (179 * minute, None),
        (180 * minute, 7.0),
    ]
    assert with_gaps(rows[:1], minute) == rows[:1]

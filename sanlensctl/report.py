"""./sanlens report --out DIR: the install-base report as one self-contained HTML file (plotly's
JavaScript inlined) and a PNG per chart (kaleido, through headless Chromium), from the dbt marts and
the hourly service-time rollups."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

import plotly.graph_objects as go

from ingest import buckets
from sanlensctl import db
from sanlensctl.errors import SanlensError

FAST = "share of I/Os <= 0.125 ms"


def cohort_histogram(client, direction: str) -> go.Figure:
    rows = client.query(
        "SELECT firmware, bucket, sum(ios) / sum(sum(ios)) OVER (PARTITION BY firmware) AS share "
        "FROM sanlens_marts.install_base_histogram WHERE direction = {d:String} "
        "GROUP BY firmware, bucket HAVING sum(ios) > 0 ORDER BY firmware, bucket",
        parameters={"d": direction},
    ).result_rows
    fig = go.Figure()
    for firmware in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == firmware]
        fig.add_bar(name=f"firmware {firmware}", x=[buckets.label(r[1]) for r in mine], y=[r[2] for r in mine])
    fig.update_layout(
        title=f"Install base: {direction} service times by firmware cohort",
        barmode="group",
        xaxis_title="service-time bucket (upper bound)",
        yaxis_title="share of I/Os",
        yaxis_tickformat=".0%",
    )
    return fig


def upgrade_effect(client) -> go.Figure:
    rows = client.query(
        "SELECT concat(array_model, ' ', from_firmware, ' -> ', to_firmware, ', ', direction) AS path, "
        "mean_delta, ci_low, ci_high, arrays FROM sanlens_marts.upgrade_effect WHERE metric = 'share_fast' "
        "ORDER BY path"
    ).result_rows
    fig = go.Figure(
        go.Scatter(
            x=[r[1] for r in rows],
            y=[r[0] for r in rows],
            mode="markers",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [r[3] - r[1] for r in rows],
                "arrayminus": [r[1] - r[2] for r in rows],
            },
            text=[f"{r[4]} arrays" for r in rows],
            marker={"size": 10},
        )
    )
    fig.add_vline(x=0, line_dash="dash")
    fig.update_layout(
        title=f"Upgrade effect: change in the {FAST}, with its 95% bootstrap interval",
        xaxis_title="after - before (mean across upgraded arrays)",
        xaxis_tickformat="+.1%",
        height=max(350, 60 * len(rows) + 150),
    )
    return fig


def top_volumes(client, top: int) -> go.Figure:
    rows = client.query(
        "SELECT concat(array, ' / ', volume) AS name, serviceTimeQuantile(h.1, h.2, 0.99) AS p99 "
        "FROM (SELECT array, volume, sumMap([bucket], [ios]) AS h FROM sanlens.service_time_hist_1h FINAL "
        "      WHERE source = 'array' AND direction = 'write' GROUP BY array, volume) "
        "ORDER BY p99 DESC LIMIT {n:UInt32}",
        parameters={"n": top},
    ).result_rows
    rows = rows[::-1]
    fig = go.Figure(go.Bar(x=[r[1] for r in rows], y=[r[0] for r in rows], orientation="h"))
    fig.update_layout(
        title=f"Top {len(rows)} volumes by p99 write service time",
        xaxis_title="p99 (ms)",
        height=max(350, 22 * len(rows) + 150),
        margin={"l": 260},
    )
    return fig


def write(out: Path, top: int = 20) -> int:
    client = db.client()
    if not client.command("SELECT count() FROM sanlens_marts.install_base_histogram"):
        raise SanlensError("the install-base mart is empty: run the pipeline (./sanlens demo) and ./sanlens dbt build")
    charts = {
        "install-base-writes": cohort_histogram(client, "write"),
        "install-base-reads": cohort_histogram(client, "read"),
        "upgrade-effect": upgrade_effect(client),
        "top-volumes-p99-write": top_volumes(client, top),
    }
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    for i, (name, fig) in enumerate(charts.items()):
        fig.update_layout(template="plotly_white", width=1100)
        fig.write_image(out / f"{name}.png", scale=1)
        sections.append(
            f'<section id="{name}">'
            + fig.to_html(full_html=False, include_plotlyjs=i == 0)
            + f'<p><a href="{name}.png">{name}.png</a></p></section>'
        )
        print(f"wrote {out / (name + '.png')}")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>sanlens: install base service times</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1150px}}</style></head>
<body><h1>Install base service times</h1>
<p>Generated {html.escape(stamp)} from the sanlens marts. Bucket n of the service-time histograms
holds (2<sup>n-8</sup>, 2<sup>n-7</sup>] ms; the {FAST} is buckets 0 to 4, the Express Writes figure.
Percentiles come from merged histograms, interpolated inside a bucket (error at most a factor of 2).</p>
{"".join(sections)}
</body></html>
"""
    (out / "index.html").write_text(page)
    print(f"wrote {out / 'index.html'}")
    return 0

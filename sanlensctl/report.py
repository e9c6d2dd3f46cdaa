"""./sanlens report --out DIR: the install-base report as one self-contained HTML file (plotly's
JavaScript inlined) and a PNG per chart (kaleido, through headless Chromium), from the dbt marts and
the hourly service-time rollups; then where the latency went on the hosts the incidents touched most,
and the incident list."""

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


PARTS = {
    "host_queueing_us": "host queueing",
    "fabric_us": "fabric",
    "array_us": "array",
    "unexplained_us": "unexplained",
}


def incident_hosts(client, top: int) -> list[str]:
    """The hosts whose paths the incidents touched most (latency added x I/Os)."""
    return [
        r[0]
        for r in client.query(
            "SELECT splitByChar(':', path)[1] AS host FROM sanlens_marts.latency_incidents ARRAY JOIN paths AS path "
            "GROUP BY host ORDER BY sum(excess_us * ios / length(paths)) DESC LIMIT {n:UInt32}",
            parameters={"n": top},
        ).result_rows
    ]


def host_breakdown(client, host: str) -> go.Figure:
    """The host's latency per minute, stacked by part (I/O-weighted over its paths: the top is what it measured)."""
    parts = ", ".join(f"sum({p} * ios) / sum(ios) AS {p}" for p in PARTS)
    rows = client.query(
        f"SELECT period_start, {parts} FROM sanlens_marts.latency_breakdown WHERE host = {{h:String}} "
        "GROUP BY period_start ORDER BY period_start",
        parameters={"h": host},
    ).named_results()
    rows = list(rows)
    fig = go.Figure()
    for column, name in PARTS.items():
        fig.add_scatter(
            name=name,
            x=[r["period_start"] for r in rows],
            y=[r[column] for r in rows],
            mode="lines",
            stackgroup="parts",
        )
    fig.update_layout(
        title=f"Where the latency of {host} goes, per minute", yaxis_title="µs per I/O (stacked: the host's latency)"
    )
    return fig


def incident_table(client) -> str:
    rows = client.query(
        "SELECT contributor, component, site, started_at, ended_at, round(excess_us, 1), severity, "
        "arrayStringConcat(paths, ', ') FROM sanlens_marts.latency_incidents LIMIT 100"
    ).result_rows
    if not rows:
        return "<p>No incident: no contributor's part stayed above its baseline on any path.</p>"
    head = ["contributor", "component", "site", "started (UTC)", "ended", "excess µs", "severity", "paths"]
    cells = [[*r[:4], r[4] if r[4] is not None else "open", *r[5:]] for r in rows]
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in cells)
    return "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{body}</tbody></table>"


def write(out: Path, top: int = 20, hosts: int = 4) -> int:
    client = db.client()
    if not client.command("SELECT count() FROM sanlens_marts.install_base_histogram"):
        raise SanlensError("the install-base mart is empty: run the pipeline (./sanlens demo) and ./sanlens dbt build")
    charts = {
        "install-base-writes": cohort_histogram(client, "write"),
        "install-base-reads": cohort_histogram(client, "read"),
        "upgrade-effect": upgrade_effect(client),
        "top-volumes-p99-write": top_volumes(client, top),
    }
    for host in incident_hosts(client, hosts):
        charts[f"breakdown-{host}"] = host_breakdown(client, host)
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
<style>body{{font-family:sans-serif;margin:2em;max-width:1150px}}
td,th{{padding:2px 8px;text-align:left;font-size:90%}}</style></head>
<body><h1>Install base service times</h1>
<p>Generated {html.escape(stamp)} from the sanlens marts. Bucket n of the service-time histograms
holds (2<sup>n-8</sup>, 2<sup>n-7</sup>] ms; the {FAST} is buckets 0 to 4, the Express Writes figure.
Percentiles come from merged histograms, interpolated inside a bucket (error at most a factor of 2).</p>
{"".join(sections)}
<h2>Incidents</h2>
<p>Runs of windows in which one contributor's part of a path's latency (host queueing, fabric, array) stayed
above the baseline learnt from that path's own data, merged per component; open ones first. excess is the
latency added per I/O. The charts above show the hosts they touched most.</p>
{incident_table(client)}
</body></html>
"""
    (out / "index.html").write_text(page)
    print(f"wrote {out / 'index.html'}")
    return 0

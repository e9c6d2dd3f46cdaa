"""./sanlens report --out DIR: the install-base report as one self-contained HTML file (plotly's
JavaScript inlined) and a PNG per chart (kaleido, through headless Chromium), from the dbt marts and
the hourly service-time rollups; then where the latency went on the hosts the incidents touched most,
and the incident list; then the tier migrations: the Tier 0 share of each volume that had one, and what
each did (sanlens_marts.tier_migration_effects); then the latency SLOs: the error budget left and the attainment
per SLO and entity over the SLO's period (`./sanlens slo`'s query), and the history of their alerts (the SLO
dashboard's episodes of sanlens.slo_alerts)."""

from __future__ import annotations

import html
from datetime import UTC, datetime, timedelta
from pathlib import Path

import plotly.graph_objects as go

from grafana.slos import episodes
from grafana.where_the_latency_is import tier0_shares
from ingest import buckets
from sanlensctl import db, slos
from sanlensctl.errors import SanlensError
from slo import definitions

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
    return html_table(head, [[*r[:4], r[4] if r[4] is not None else "open", *r[5:]] for r in rows])


def html_table(head: list[str], rows: list[list]) -> str:
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{body}</tbody></table>"


NO_SLO_WINDOWS = (
    "<p>No SLO windows yet: the burn_rates job has judged no I/O against the SLOs over their period (or "
    "sanlens_marts.slo_compliance is not built: ./sanlens dbt build).</p>"
)


def slo_budgets(client, period_days: float, top: int) -> dict[str, list[dict]]:
    """Per SLO, its `top` entities with the least error budget left over the period, as `./sanlens slo` shows them
    (sanlens_marts.slo_compliance); empty when the view is not built or holds no window."""
    if not client.command("EXISTS TABLE sanlens_marts.slo_compliance"):
        return {}
    rows = client.query(slos.QUERY, parameters={"days": round(period_days), "limit": top}).named_results()
    budgets: dict[str, list[dict]] = {}
    for r in rows:
        budgets.setdefault(r["slo"], []).append(r)
    return budgets


def slo_budget(slo: definitions.Slo, period_days: float, rows: list[dict]) -> go.Figure:
    """The SLO's entities by error budget left over the period (least at the top, red where it is overspent; a bar
    below -100 % stops there, its text says how far it went), each with its attainment and the alerts firing."""
    fig = go.Figure(
        go.Bar(
            orientation="h",
            y=[f"{r['entity']} ({r['attainment']:.3%})" for r in rows],
            x=[max(r["budget_left"], -1) for r in rows],
            marker_color=["crimson" if r["budget_left"] < 0 else "seagreen" for r in rows],
            text=[f"{r['budget_left']:,.1%}" + (f", {r['firing']} firing" if r["firing"] else "") for r in rows],
            textposition="auto",
            hovertext=[f"{r['ios']:,.0f} I/Os" for r in rows],
        )
    )
    fig.add_vline(x=0, line_dash="dash")
    fig.update_layout(
        title=f"Latency SLO {slo.name}: error budget left per entity over the last {period_days:g} days<br>"
        f"<sup>{html.escape(slo.description)}; objective {slo.objective:.2%}, each entity's attainment in "
        "brackets</sup>",
        xaxis_title="share of the error budget left (below 0: overspent)",
        xaxis_tickformat=".0%",
        xaxis_range=[-1.05, 1.05],
        yaxis_autorange="reversed",
        height=max(350, 28 * len(rows) + 170),
        margin={"l": 300},
    )
    return fig


def slo_alert_table(client) -> str:
    """The SLO alerts' episodes, firing ones first, then the most recent."""
    rows = client.query(
        f"SELECT slo, entity, site, severity, started_at, resolved_at, "
        f"{', '.join(f'peak_burn_{w}' for w in definitions.WINDOWS)}, budget_left FROM {episodes('1')} "
        "ORDER BY resolved_at IS NULL DESC, started_at DESC LIMIT 100"
    ).result_rows
    if not rows:
        return "<p>No SLO alert has fired: no entity burnt its error budget fast enough for a page or a ticket.</p>"
    peaks = [f"peak burn {w}" for w in definitions.WINDOWS]
    return html_table(
        ["SLO", "entity", "site", "severity", "fired (UTC)", "resolved", *peaks, "period budget left"],
        [
            [*r[:4], f"{r[4]:%Y-%m-%d %H:%M}", "firing" if r[5] is None else f"{r[5]:%Y-%m-%d %H:%M}"]
            + [f"{b:.1f}" for b in r[6:-1]]
            + [f"{r[-1]:.1%}"]
            for r in rows
        ],
    )


WINDOW_S = 10  # the arrays' collection interval: one Tier 0 share per volume and window
TIER_CONTEXT = timedelta(hours=1)  # the share is shown from this long before a volume's first episode to after its last
TIER_POINTS = 2000  # at most about this many shares a chart: coarser windows over a longer span
EFFECTS = {  # the measures of tier_migration_effects: name, unit
    "array_us": ("array service time", "µs"),
    "host_us": ("host latency", "µs"),
    "batch_requests": ("batch requests/s", "/s"),
    "file_us": ("file latency", "µs"),
}


def tier_episodes(client) -> dict[tuple[str, str], list[dict]]:
    """The tier-migration episodes per (array, volume), in order; one still moving ends at its last window."""
    rows = client.query(
        "SELECT array, volume, direction, started_at, coalesce(settled_at, last_window) AS ended_at, "
        "settled_at IS NULL AS moving, tier0_share_before, tier0_share_reached "
        "FROM sanlens.tier_episodes FINAL ORDER BY array, volume, started_at"
    ).named_results()
    episodes: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        episodes.setdefault((r["array"], r["volume"]), []).append(r)
    return episodes


def tier_share(client, array: str, volume: str, episodes: list[dict]) -> go.Figure:
    """The volume's Tier 0 share around its episodes, each episode shaded from its start to where it settled."""
    start = episodes[0]["started_at"] - TIER_CONTEXT
    end = max(e["ended_at"] for e in episodes) + TIER_CONTEXT
    step = max(WINDOW_S, int((end - start).total_seconds()) // TIER_POINTS // WINDOW_S * WINDOW_S)
    sql = tier0_shares(
        "toStartOfInterval(ts, toIntervalSecond({step:UInt32}))",
        "array = {array:String} AND volume = {volume:String}\n"
        "    AND ts BETWEEN {start:DateTime64(3)} AND {end:DateTime64(3)}",
    )
    parameters = {"step": step, "array": array, "volume": volume, "start": start, "end": end}
    rows = list(client.query(sql, parameters=parameters).named_results())
    fig = go.Figure(go.Scatter(x=[r["time"] for r in rows], y=[r["tier0_share"] for r in rows], mode="lines"))
    for e in episodes:
        moved = f"{e['direction']}: {e['tier0_share_before']:.0%} to {e['tier0_share_reached']:.0%}"
        fig.add_vrect(
            x0=e["started_at"],
            x1=e["ended_at"],
            fillcolor="orange",
            opacity=0.25,
            line_width=0,
            annotation_text=moved + (" so far" if e["moving"] else ""),
            annotation_position="top left",
        )
    fig.update_layout(
        title=f"Tier 0 share of {array} / {volume}, its tier migrations shaded",
        yaxis_title="share of the volume's capacity in Tier 0",
        yaxis_tickformat=".0%",
        yaxis_rangemode="tozero",
    )
    return fig


def tier_effects(client) -> go.Figure:
    """What each settled episode did per host: each measure's change relative to before, with its 95% interval,
    the means before and after as the bar's text."""
    figures = ", ".join(f"{m}_before, {m}_after, {m}_change_ci_low, {m}_change_ci_high" for m in EFFECTS)
    rows = list(
        client.query(
            f"SELECT volume, host, started_at, time_to_effect_s, {figures} FROM sanlens_marts.tier_migration_effects "
            "ORDER BY started_at DESC, volume, host"
        ).named_results()
    )
    labels = [
        f"{r['host']} on {r['volume']}<br>{r['started_at']:%Y-%m-%d %H:%M}, effect after {r['time_to_effect_s']} s"
        for r in rows
    ]
    fig = go.Figure()
    for measure, (name, unit) in EFFECTS.items():
        shown = [(label, r) for label, r in zip(labels, rows) if r[f"{measure}_before"]]  # 0: not measured
        before, after, low, high = (
            [r[f"{measure}_{figure}"] for _, r in shown]
            for figure in ("before", "after", "change_ci_low", "change_ci_high")
        )
        fig.add_bar(
            name=name,
            orientation="h",
            y=[label for label, _ in shown],
            x=[(a - b) / b for a, b in zip(after, before)],
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [(h - (a - b)) / b for h, a, b in zip(high, after, before)],
                "arrayminus": [((a - b) - lo) / b for lo, a, b in zip(low, after, before)],
            },
            text=[f"{b:,.0f} to {a:,.0f} {unit}" for a, b in zip(after, before)],
            textposition="inside",
            insidetextanchor="middle",
        )
    fig.add_vline(x=0, line_dash="dash")
    fig.update_layout(
        title="Tier migration effects: change after - before, relative to before, with its 95% bootstrap interval",
        barmode="group",
        xaxis_title="after / before - 1 (means over matched periods)",
        xaxis_tickformat="+.0%",
        yaxis_autorange="reversed",
        height=max(350, 160 * len(rows) + 150),
        margin={"l": 260},
    )
    return fig


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
    tiering = {
        f"tier-share-{array}-{volume}": tier_share(client, array, volume, episodes)
        for (array, volume), episodes in tier_episodes(client).items()
    }
    if tiering and client.command("SELECT count() FROM sanlens_marts.tier_migration_effects"):
        tiering["tier-migration-effects"] = tier_effects(client)
    try:
        slo_file = definitions.load()
    except definitions.SloFileError as exc:
        raise SanlensError(str(exc)) from None
    budgets = slo_budgets(client, slo_file.period_days, top)
    latency_slos = {
        f"slo-{s.name}": slo_budget(s, slo_file.period_days, budgets[s.name])
        for s in slo_file.slos
        if s.name in budgets
    }
    out.mkdir(parents=True, exist_ok=True)
    sections = {}
    for i, (name, fig) in enumerate({**charts, **tiering, **latency_slos}.items()):
        fig.update_layout(template="plotly_white", width=1100)
        fig.write_image(out / f"{name}.png", scale=1)
        sections[name] = (
            f'<section id="{name}">'
            + fig.to_html(full_html=False, include_plotlyjs=i == 0)
            + f'<p><a href="{name}.png">{name}.png</a></p></section>'
        )
        print(f"wrote {out / (name + '.png')}")
    no_tiering = "<p>No tier migration: no hybrid volume's Tier 0 share moved beyond its noise.</p>"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>sanlens: install base service times</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1150px}}
td,th{{padding:2px 8px;text-align:left;font-size:90%}}</style></head>
<body><h1>Install base service times</h1>
<p>Generated {html.escape(stamp)} from the sanlens marts. Bucket n of the service-time histograms
holds (2<sup>n-8</sup>, 2<sup>n-7</sup>] ms; the {FAST} is buckets 0 to 4, the Express Writes figure.
Percentiles come from merged histograms, interpolated inside a bucket (error at most a factor of 2).</p>
{"".join(sections[name] for name in charts)}
<h2>Incidents</h2>
<p>Runs of windows in which one contributor's part of a path's latency (host queueing, fabric, array) stayed
above the baseline learnt from that path's own data, merged per component; open ones first. excess is the
latency added per I/O. The charts above show the hosts they touched most.</p>
{incident_table(client)}
<h2>Tier migration</h2>
<p>Auto-tiering moving a hybrid volume's data between SSD Tier 0 and Tier 1, as the tiering job found it: from
the last window at the old Tier 0 share (shaded from there) to the window where the share settled. What each
settled one did on each host with a path to the volume compares means over matched periods before and after
it settled; the interval is a 95% moving-block bootstrap interval of the change.</p>
{"".join(sections[name] for name in tiering) or no_tiering}
<h2>Latency SLOs</h2>
<p>Each SLO of the SLO file (slo/slos.yaml unless SANLENS_SLOS names another): per entity, the least first, the
share of the error budget (1 - objective of the I/Os) its I/Os of the last {slo_file.period_days:g} days left
unspent, and the attainment (the share of I/Os within the threshold), as <code>./sanlens slo</code> shows them.
Then the alerts: each episode of a severity on an entity, from its first firing minute to when it resolved, with
the highest burn rate of each window while it fired (1 spends the budget in exactly the period).</p>
{"".join(sections[name] for name in latency_slos) or NO_SLO_WINDOWS}
{slo_alert_table(client) if latency_slos else ""}
</body></html>
"""
    (out / "index.html").write_text(page)
    print(f"wrote {out / 'index.html'}")
    return 0

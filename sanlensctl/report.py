"""./sanlens report --out DIR: the install-base report as one self-contained HTML file (plotly's
JavaScript inlined) and a PNG per chart (kaleido, through headless Chromium), from the dbt marts and
the hourly service-time rollups; then where the latency went on the hosts the incidents touched most,
and the incident list; then the tier migrations: the Tier 0 share of each volume that had one, and what
each did (sanlens_marts.tier_migration_effects); then the tiers of the hybrid arrays: Tier 0's fill against its
warning level, each tier's IOPS and service time, where the writes land (sanlensctl/tier_charts.py); then the latency
SLOs: the error budget left and the attainment
per SLO and entity over the SLO's period (queries/budget.py, as `./sanlens slo` and the SLO dashboard
have them), and the history of their alerts (the SLO dashboard's episodes of sanlens.slo_alerts). Every query is
one of queries/: this module runs them and draws."""

from __future__ import annotations

import html
import re
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import plotly.graph_objects as go
from plotly.colors import DEFAULT_PLOTLY_COLORS
from plotly.subplots import make_subplots

from queries import (
    budget,
    cohorts,
    incidents,
    latency_breakdown,
    slo_alerts,
    slowest_volumes,
    tier_migrations,
    upgrade_effect,
)
from sanlensctl import db, load_curves, slos, tier_charts
from sanlensctl.errors import SanlensError
from slo import definitions

WITHIN = upgrade_effect.FIGURES["share_within_0_125_ms"].label
IN_BUCKET = upgrade_effect.FIGURES["share_0_0625_to_0_125_ms"].label


def said_empty(fig: go.Figure, why: str) -> go.Figure:
    """A chart without data says why in its middle, instead of showing a blank axis."""
    fig.add_annotation(
        text="<br>".join(textwrap.wrap(why, 90)),
        xref="paper",
        yref="paper",
        x=0.5,
        y=0.5,
        showarrow=False,
        font={"size": 15},
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=300)
    return fig


def cohort_figures(client) -> list[dict]:
    """Every cohort (array model, firmware, direction) over everything the store holds: the install-base dashboard's
    cohort query (queries/cohorts.py)."""
    return list(client.query(cohorts.figures(cohorts.every_array())).named_results())


def arrays_behind(n: int) -> str:
    return f"{n} array" if n == 1 else f"{n} arrays"


def media_of_models(client) -> dict[str, str]:
    """Each array model's media (ssd, hybrid), from the inventory."""
    return dict(client.query(cohorts.MEDIA).result_rows)


def cohort_histogram(client, direction: str, found: list[dict], media: dict[str, str]) -> go.Figure:
    """The service-time histogram of each cohort, one chart per array model (a hybrid model is never pooled with
    all-flash ones), each firmware's bars named with the arrays behind them."""
    rows = client.query(cohorts.HISTOGRAM, parameters={"d": direction}).result_rows
    title = f"Install base: {direction} service times by array model and firmware"
    models = sorted({r[0] for r in rows})
    if not models:
        return said_empty(go.Figure(layout_title_text=title), f"No array reported a {direction} I/O in its histograms.")
    arrays = {(c["array_model"], c["firmware"]): c["arrays"] for c in found if c["direction"] == direction}
    firmwares = sorted({r[1] for r in rows})
    colors = dict(zip(firmwares, DEFAULT_PLOTLY_COLORS))
    fig = make_subplots(
        rows=len(models),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=[f"{m} ({media[m]})" if m in media else m for m in models],
    )
    for row, model in enumerate(models, 1):
        for firmware in sorted({r[1] for r in rows if r[0] == model}):
            mine = [r for r in rows if r[:2] == (model, firmware)]
            fig.add_bar(
                name=f"{model} on {firmware}: {arrays_behind(arrays.get((model, firmware), 0))}",
                x=[r[4] for r in mine],
                y=[r[3] for r in mine],
                marker_color=colors[firmware],
                row=row,
                col=1,
            )
        fig.update_yaxes(title_text="share of I/Os", tickformat=".0%", row=row, col=1)
    labels = dict(sorted((r[2], r[4]) for r in rows))
    fig.update_xaxes(categoryorder="array", categoryarray=list(labels.values()))
    fig.update_xaxes(title_text="service-time bucket", row=len(models), col=1)
    fig.update_layout(title=title, barmode="group", height=120 + 230 * len(models))
    return fig


def cohort_label(c: dict) -> str:
    return (
        f"{c['array_model']} on {c['firmware']}, {c['direction']}s<br>{arrays_behind(c['arrays'])}; "
        f"{c['busiest_array']}: {c['busiest_array_ios_share']:.0%} of the I/Os"
    )


def cohort_shares(found: list[dict]) -> go.Figure:
    """Each cohort's share of I/Os within 0.125 ms: pooled over its I/Os, and the spread of its arrays' own shares
    (lowest, quartiles, highest) with their mean, so that an array carrying most of the I/Os shows; and its share in
    the bucket of 0.0625 to 0.125 ms alone (the Express Writes study's bar), pooled."""
    title = f"Install base: the {WITHIN} per cohort, weighted by I/O and by array"
    if not found:
        return said_empty(go.Figure(layout_title_text=title), "No array reported an I/O in its histograms.")
    labels = [cohort_label(c) for c in found]
    fig = go.Figure()
    fig.add_box(
        name="the arrays' own shares: lowest, quartiles, highest; dashed: their mean (array-weighted)",
        orientation="h",
        y=labels,
        lowerfence=[c["share_within_0_125_ms_array_min"] for c in found],
        q1=[c["share_within_0_125_ms_array_p25"] for c in found],
        median=[c["share_within_0_125_ms_array_median"] for c in found],
        q3=[c["share_within_0_125_ms_array_p75"] for c in found],
        upperfence=[c["share_within_0_125_ms_array_max"] for c in found],
        mean=[c["share_within_0_125_ms_array_mean"] for c in found],
        boxmean=True,
        marker_color="steelblue",
    )
    fig.add_scatter(
        name="the cohort's I/Os pooled (I/O-weighted)",
        x=[c["share_within_0_125_ms"] for c in found],
        y=labels,
        mode="markers",
        marker={"symbol": "diamond", "size": 13, "color": "crimson"},
    )
    fig.add_scatter(
        name=f"{IN_BUCKET} alone, pooled",
        x=[c["share_0_0625_to_0_125_ms"] for c in found],
        y=labels,
        mode="markers",
        marker={"symbol": "x", "size": 10, "color": "darkorange"},
    )
    fig.update_layout(
        title=title,
        xaxis_title="share of I/Os",
        xaxis_tickformat=".0%",
        xaxis_rangemode="tozero",
        yaxis_autorange="reversed",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        height=max(400, 70 * len(found) + 220),
        margin={"l": 330, "t": 120},
    )
    return fig


def cohort_table(found: list[dict]) -> str:
    head = ["model", "firmware", "direction", "arrays", "I/Os", "in 0.0625-0.125 ms, I/O-weighted"]
    head += ["array-weighted", "within 0.125 ms, I/O-weighted", "array-weighted", "lowest", "first quartile"]
    head += ["median", "third quartile", "highest", "busiest array (its part of the I/Os)"]
    shares = ("share_0_0625_to_0_125_ms", "share_0_0625_to_0_125_ms_array_mean", "share_within_0_125_ms")
    shares += ("share_within_0_125_ms_array_mean", "share_within_0_125_ms_array_min", "share_within_0_125_ms_array_p25")
    shares += (
        "share_within_0_125_ms_array_median",
        "share_within_0_125_ms_array_p75",
        "share_within_0_125_ms_array_max",
    )
    return html_table(
        head,
        [
            [c["array_model"], c["firmware"], c["direction"], c["arrays"], f"{c['ios']:,}"]
            + [f"{c[s]:.1%}" for s in shares]
            + [f"{c['busiest_array']} ({c['busiest_array_ios_share']:.0%})"]
            for c in found
        ],
    )


COHORTS_NOTE = f"""<p>A cohort is the arrays of one model on one firmware: models are never pooled (a hybrid array's
service times are its media's). Its I/O-weighted {html.escape(WITHIN)} (cumulative) pools the arrays' I/Os, so an
array that carries most of them drags it; the array-weighted share is the mean of the arrays' own shares, the box
their spread. The {html.escape(IN_BUCKET)} is bucket 4 alone, the bar the Express Writes study reads ("nearly 40 % of
writes at .12 ms post upgrade compared to about 10 % pre"). Over everything the store holds, as the install-base
dashboard's cohort table has it over its time range.</p>"""
UPGRADE_EFFECT_NOTE = """<p>Each upgraded array's change compares the nearest periods with data before and after its
firmware change, as many on each side, leaving out the period of the change: whole hours where the data holds 6 on
each side, else minutes (a run as short as the demo's 20 minutes); its interval resamples those periods. The mean
across the arrays of an upgrade path has its interval across them (no width with one array). The table gives every
figure of each path before and after, with the ratio after/before (the study's "3X" for a share) and their 95%
intervals across the arrays: the two shares, the mean service time (from the histogram's bucket midpoints), p50, p99
and the largest minute's mean (the study's spikes).</p>"""


def why_no_upgrade_effect(client) -> str:
    changed = client.command(upgrade_effect.ARRAYS_CHANGED)
    if not changed:
        return "No upgrade effect: no array has changed its firmware in the inventory (sanlens.topology)."
    return (
        f"No upgrade effect: {arrays_behind(changed)} changed firmware, but none has array-reported service-time "
        "histograms on both sides of its change. The effect compares the nearest periods with data before and after "
        "each change, leaving out the period of the change: whole hours where the data holds 6 on each side, else "
        "minutes (./sanlens dbt build once the data is in)."
    )


ARRAYS_BELOW = 0.35  # where an upgrade path's arrays are drawn, below the path's mean


def upgrade_path(r: dict) -> tuple[str, str]:
    return f"{r['array_model']} {r['from_firmware']} -> {r['to_firmware']}", r["direction"]


def periods_compared(arrays: list[dict]) -> str:
    """The periods the arrays' changes compare, e.g. "5 to 8 minutes each way"."""
    spans = []
    for unit in sorted({a["period"] for a in arrays}):
        counts = [a["matched_periods"] for a in arrays if a["period"] == unit]
        low, high = min(counts), max(counts)
        spans.append(f"{low} to {high} {unit}s" if low < high else f"{low} {unit}" + ("s" if low > 1 else ""))
    return "; ".join(spans) + " each way"


def path_label(path: dict, arrays: list[dict]) -> str:
    mine = [a for a in arrays if upgrade_path(a) == upgrade_path(path)]
    return f"{', '.join(upgrade_path(path))}s<br>{arrays_behind(path['arrays'])}, {periods_compared(mine)}"


def padded(values: list[float], margin: float = 0.12) -> list[float]:
    """An axis range around the values and zero, with room for the labels at its ends."""
    low, high = min([*values, 0.0]), max([*values, 0.0])
    room = (high - low) * margin or 0.01
    return [low - room, high + room]


def upgrade_chart_name(share: str) -> str:
    return "upgrade-effect-" + share.replace("_", "-")


def upgrade_effect_chart(client, metric: str) -> go.Figure:
    """Per upgrade path, the mean change of a share (`metric`) across its arrays with its interval across them, and
    each array's own change with its interval over its periods."""
    paths = [p for p in client.query(upgrade_effect.per_path()).named_results() if p["metric"] == metric]
    title = f"Upgrade effect: change in the {upgrade_effect.FIGURES[metric].label}, with its 95% bootstrap interval"
    if not paths:
        return said_empty(go.Figure(layout_title_text=title), why_no_upgrade_effect(client))
    arrays = list(
        client.query(upgrade_effect.per_array("metric = {m:String}"), parameters={"m": metric}).named_results()
    )
    row = {upgrade_path(p): i for i, p in enumerate(paths)}  # a path's mean on its row, its arrays just below
    fig = go.Figure()
    fig.add_scatter(
        name="each array: its change, the interval over its periods",
        x=[a["delta"] for a in arrays],
        y=[row[upgrade_path(a)] + ARRAYS_BELOW for a in arrays],
        mode="markers+text" if len(arrays) <= 12 else "markers",
        error_x={
            "type": "data",
            "symmetric": False,
            "array": [a["delta_ci_high"] - a["delta"] for a in arrays],
            "arrayminus": [a["delta"] - a["delta_ci_low"] for a in arrays],
            "color": "grey",
        },
        text=[a["array"] for a in arrays],
        textposition="bottom center",
        textfont={"size": 10, "color": "grey"},
        marker={"size": 8, "color": "grey", "symbol": "circle-open"},
    )
    fig.add_scatter(
        name="the mean across the arrays, the interval across them",
        x=[p["mean_delta"] for p in paths],
        y=list(range(len(paths))),
        mode="markers",
        error_x={
            "type": "data",
            "symmetric": False,
            "array": [p["ci_high"] - p["mean_delta"] for p in paths],
            "arrayminus": [p["mean_delta"] - p["ci_low"] for p in paths],
            "thickness": 3,
        },
        marker={"size": 13, "color": "crimson", "symbol": "diamond"},
    )
    fig.add_vline(x=0, line_dash="dash")
    fig.update_layout(
        title=title,
        xaxis_title="after - before, in percentage points of the I/Os",
        xaxis_tickformat="+.0%",
        xaxis_range=padded([a[f] for a in arrays for f in ("delta_ci_low", "delta_ci_high")]),
        yaxis={
            "tickvals": list(range(len(paths))),
            "ticktext": [path_label(p, arrays) for p in paths],
            "range": [len(paths) - 0.3, -0.5],
            "showgrid": False,
        },
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
        height=max(400, 110 * len(paths) + 220),
        margin={"l": 260, "t": 110},
    )
    return fig


def with_interval(value: float, low: float, high: float, unit: str) -> str:
    if unit == "percentunit":
        return f"{value:.1%} [{low:.1%}, {high:.1%}]"
    return f"{value:.3f} [{low:.3f}, {high:.3f}] ms"


def upgrade_effect_table(client) -> str:
    """Every figure of each upgrade path before and after, the ratio after/before, each with its 95% interval across
    the path's arrays (the dashboard's upgrade-effect table has them per array)."""
    rows = list(client.query(upgrade_effect.per_path()).named_results())
    cells = []
    for r in rows:
        figure = upgrade_effect.FIGURES[r["metric"]]
        cells.append(
            [", ".join(upgrade_path(r)) + "s", r["arrays"], figure.label]
            + [
                with_interval(r[f"mean_{side}"], r[f"mean_{side}_ci_low"], r[f"mean_{side}_ci_high"], figure.unit)
                for side in ("before", "after")
            ]
            + [f"{r['ratio']:.2f} [{r['ratio_ci_low']:.2f}, {r['ratio_ci_high']:.2f}]"]
        )
    head = ["upgrade path", "arrays", "figure", "before (mean of the arrays)", "after", "after / before"]
    return html_table(head, cells)


def top_volumes(client, top: int) -> go.Figure:
    rows = client.query(slowest_volumes.BY_P99_WRITE, parameters={"n": top}).result_rows
    if not rows:
        return said_empty(
            go.Figure(layout_title_text="Top volumes by p99 write service time"),
            "No volume has array-reported write service-time histograms yet.",
        )
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
    return [r[0] for r in client.query(incidents.HOSTS_TOUCHED_MOST, parameters={"n": top}).result_rows]


def host_breakdown(client, host: str) -> go.Figure:
    """The host's latency per minute, stacked by part (I/O-weighted over its paths: the top is what it measured)."""
    rows = list(client.query(latency_breakdown.PER_MINUTE, parameters={"h": host}).named_results())
    if not rows:
        return said_empty(
            go.Figure(layout_title_text=f"Where the latency of {host} goes, per minute"),
            f"No latency breakdown of {host}: sanlens_marts.latency_breakdown holds no minute of its paths "
            "(./sanlens dbt build once the breakdown job's windows are in).",
        )
    rows = with_gaps(rows, timedelta(minutes=1))
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
        title=f"Where the latency of {host} goes, per minute",
        xaxis_title="time (UTC; no data: drawn at 0)",
        yaxis_title="µs per I/O (stacked: the host's latency)",
    )
    return fig


def with_gaps(rows: list[dict], step: timedelta) -> list[dict]:
    """`rows` (by period_start, one per `step`) with an empty row at each end of a stretch without data: a line is
    not drawn across hours without data (two demo runs apart, say) as if it had been measured."""
    out = []
    for row in rows:
        if out and row["period_start"] - out[-1]["period_start"] > step:
            empty = dict.fromkeys(row)
            out += [empty | {"period_start": out[-1]["period_start"] + step}]
            out += [empty | {"period_start": row["period_start"] - step}]
        out.append(row)
    return out


def incident_table(client) -> str:
    """The incidents, open ones first, then the most recent, as `./sanlens explain` lists them, and the rule of
    their severity."""
    rows = client.query(incidents.LATEST).named_results()
    cells = [incidents.cells(r) for r in rows]
    if not cells:
        return "<p>No incident: no contributor's part stayed above its baseline on any path.</p>"
    rule = incidents.SEVERITY_RULE
    return html_table(incidents.HEAD, cells) + f"<p>{html.escape(rule[0].upper() + rule[1:])}.</p>"


def html_table(head: list[str], rows: list[list]) -> str:
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{body}</tbody></table>"


NO_SLO_WINDOWS = "<p>No SLO windows yet: the burn_rates job has judged no I/O against the SLOs over their period.</p>"


def slo_budget(slo: definitions.Slo, period_days: float, rows: list[dict]) -> go.Figure:
    """The SLO's entities by error budget left over the period (least at the top, red where it is overspent; a bar
    below -100 % stops there, its text says how far it went), each with its attainment and the alerts firing."""
    fig = go.Figure(
        go.Bar(
            orientation="h",
            y=[f"{r['entity']} ({r['attainment']:.3%})" for r in rows],
            x=[max(r["budget_left"], -1) for r in rows],
            marker_color=["crimson" if r["budget_left"] < 0 else "seagreen" for r in rows],
            text=[slos.percent(r["budget_left"]) + (f", {r['firing']} firing" if r["firing"] else "") for r in rows],
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
    rows = client.query(slo_alerts.LATEST).result_rows
    if not rows:
        return "<p>No SLO alert has fired: no entity burnt its error budget fast enough for a page or a ticket.</p>"
    peaks = [f"peak burn {w}" for w in definitions.WINDOWS]
    return html_table(
        ["SLO", "entity", "site", "severity", "fired (UTC)", "resolved", *peaks, "budget left at its last minute"],
        [
            [*r[:4], f"{r[4]:%Y-%m-%d %H:%M}", "firing" if r[5] is None else f"{r[5]:%Y-%m-%d %H:%M}"]
            + [f"{b:.1f}" for b in r[6:-1]]
            + [slos.percent(r[-1])]
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
    rows = client.query(tier_migrations.EPISODES).named_results()
    episodes: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        episodes.setdefault((r["array"], r["volume"]), []).append(r)
    return episodes


def tier_share(client, array: str, volume: str, episodes: list[dict]) -> go.Figure:
    """The volume's Tier 0 share around its episodes, each episode shaded from its start to where it settled."""
    start = episodes[0]["started_at"] - TIER_CONTEXT
    end = max(e["ended_at"] for e in episodes) + TIER_CONTEXT
    step = max(WINDOW_S, int((end - start).total_seconds()) // TIER_POINTS // WINDOW_S * WINDOW_S)
    sql = tier_migrations.tier0_shares(
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
    the means before and after and the blocks the interval rests on as the bar's text; a low-confidence
    interval's bar hatched."""
    rows = list(client.query(tier_migrations.EFFECTS).named_results())
    labels = [
        f"{r['host']} on {r['volume']}<br>{r['started_at']:%Y-%m-%d %H:%M}, effect after {r['time_to_effect_s']} s"
        for r in rows
    ]
    fig = go.Figure()
    for measure, (name, unit) in EFFECTS.items():
        shown = [(label, r) for label, r in zip(labels, rows) if r[f"{measure}_before"]]  # 0: not measured
        before, after, low, high, blocks, weak = (
            [r[f"{measure}_{figure}"] for _, r in shown] for figure in tier_migrations.EFFECT_FIGURES
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
            text=[
                f"{b:,.0f} to {a:,.0f} {unit}, {n} block{'s' * (n != 1)}" + (" (low confidence)" if w else "")
                for a, b, n, w in zip(after, before, blocks, weak)
            ],
            marker_pattern_shape=["/" if w else "" for w in weak],
            textposition="auto",  # outside a bar too short to hold it legibly
            insidetextanchor="middle",
            cliponaxis=False,
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


LOAD_CURVE_ARRAYS = 3  # the arrays whose load curves the report draws, those with a knee first


def file_name(chart: str) -> str:
    """A chart's file name (without .png) and HTML id: its name with what a path or an id cannot hold (an array
    named `2/hg6/:` by a broken poller, say) as `_`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", chart)


def write(out: Path, top: int = 20, hosts: int = 4) -> int:
    client = db.client()
    if not client.command(cohorts.HAS_HISTOGRAMS):
        raise SanlensError("the install-base mart is empty: run the pipeline (./sanlens demo) and ./sanlens dbt build")
    found, media = cohort_figures(client), media_of_models(client)
    charts = {
        "install-base-writes": cohort_histogram(client, "write", found, media),
        "install-base-reads": cohort_histogram(client, "read", found, media),
        "install-base-cohorts": cohort_shares(found),
        **{upgrade_chart_name(share): upgrade_effect_chart(client, share) for share in upgrade_effect.SHARES},
        "top-volumes-p99-write": top_volumes(client, top),
    }
    for host in incident_hosts(client, hosts):
        charts[f"breakdown-{host}"] = host_breakdown(client, host)
    tiering = {
        f"tier-share-{array}-{volume}": tier_share(client, array, volume, episodes)
        for (array, volume), episodes in tier_episodes(client).items()
    }
    if tiering and client.command(tier_migrations.HAS_EFFECTS):
        tiering["tier-migration-effects"] = tier_effects(client)
    tier_fill = tier_charts.charts(client, said_empty)
    try:
        slo_file = definitions.load()
    except definitions.SloFileError as exc:
        raise SanlensError(str(exc)) from None
    budgets = budget.over_the_period(client, slo_file.period_days, top)
    load = load_curves.charts(client, said_empty, LOAD_CURVE_ARRAYS)
    latency_slos = {
        f"slo-{s.name}": slo_budget(s, slo_file.period_days, budgets[s.name])
        for s in slo_file.slos
        if s.name in budgets
    }
    out.mkdir(parents=True, exist_ok=True)
    notes = {
        "install-base-cohorts": COHORTS_NOTE + cohort_table(found),
        upgrade_chart_name(upgrade_effect.SHARES[-1]): UPGRADE_EFFECT_NOTE + upgrade_effect_table(client),
    }
    sections = {}
    for i, (name, fig) in enumerate({**charts, **load, **tiering, **tier_fill, **latency_slos}.items()):
        fig.update_layout(template="plotly_white", width=1100)
        file = file_name(name)
        fig.write_image(out / f"{file}.png", scale=1)
        sections[name] = (
            f'<section id="{file}">'
            + fig.to_html(full_html=False, include_plotlyjs=i == 0)
            + f'<p><a href="{file}.png">{file}.png</a></p>{notes.get(name, "")}</section>'
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
holds (2<sup>n-8</sup>, 2<sup>n-7</sup>] ms; the {IN_BUCKET} is bucket 4 alone, the bar of the Express Writes
study, the {WITHIN} buckets 0 to 4, cumulative.
Percentiles come from merged histograms, interpolated inside a bucket (error at most a factor of 2).</p>
{"".join(sections[name] for name in charts)}
<h2>Incidents</h2>
<p>Runs of windows in which one contributor's part of a path's latency (host queueing, fabric, array) stayed
above the baseline learnt from that path's own data, merged per component; open ones first, each with the latency
it added per I/O, its severity and why, and the hosts, volumes and arrays it touched. The charts above show the hosts
they touched most.</p>
{incident_table(client)}
<h2>Load and latency</h2>
{load_curves.NOTE}
{"".join(sections[name] for name in load)}
<h2>Tier migration</h2>
<p>Auto-tiering moving a hybrid volume's data between SSD Tier 0 and Tier 1, as the tiering job found it: from
the last window at the old Tier 0 share (shaded from there) to the window where the share settled. What each
settled one did on each host with a path to the volume compares means over matched periods before and after
it settled; the interval is a 95% moving-block bootstrap interval of the change, resting on the whole minutes
(blocks) of the shorter period: on fewer than 10 it is low-confidence (its bar hatched).</p>
{"".join(sections[name] for name in tiering) or no_tiering}
<h2>Tiers</h2>
{tier_charts.NOTE}
{"".join(sections[name] for name in tier_fill)}
<h2>Latency SLOs</h2>
<p>Each SLO of the SLO file (slo/slos.yaml unless SANLENS_SLOS names another): per entity, the least first, the
share of the error budget (1 - objective of the I/Os) its I/Os of the last {slo_file.period_days:g} days left
unspent, and the attainment (the share of I/Os within the threshold), as <code>./sanlens slo</code> shows them.
Then the alerts: each episode of a severity on an entity, from its first firing minute to when it resolved, with
the highest burn rate of each window while it fired (1 spends the budget in exactly the period) and the budget
left at its last minute, as its last page or ticket said it: the I/Os after that minute are not in it, the chart's
figure is the budget left now.</p>
{"".join(sections[name] for name in latency_slos) or NO_SLO_WINDOWS}
{slo_alert_table(client) if latency_slos else ""}
</body></html>
"""
    (out / "index.html").write_text(page)
    print(f"wrote {out / 'index.html'}")
    return 0

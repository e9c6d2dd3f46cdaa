"""The report's tiers: for the hybrid arrays whose Tier 0 warned (then the fullest), one chart each of Tier 0's fill
against its warning level, the tiers' IOPS and service times, and where the writes land. The SQL is the "Tiers"
dashboard's (queries/tiers.py)."""

from __future__ import annotations

from datetime import timedelta

import plotly.graph_objects as go
from plotly.colors import DEFAULT_PLOTLY_COLORS
from plotly.subplots import make_subplots

from queries import tiers
from sanlensctl.chart_axes import log_ms_axis

ARRAYS = 4  # the hybrid arrays the report draws
POINTS = 1500  # at most about this many minutes a chart: coarser buckets over a longer span
ONE_ARRAY = "array = {array:String} AND volume = ''"
NOTE = f"""<p>Per hybrid array (those whose Tier 0 reached its warning level first, then the fullest), over
everything the store holds: how full its Tier 0 (SSD) is, the dashed line the warning level
({tiers.TIER0_WARNING_FILL:.0%}: past it auto-tiering's reserve for new writes runs out and new writes begin to land on
Tier 1), the minutes at or above it shaded; each tier's IOPS and mean service time (log scale), its volumes summed and
I/O-weighted; and each tier's share of the writes: where they land. Per volume and tier the "Tiers" dashboard has the
same figures.</p>"""


def bucket_of(client, array: str) -> str:
    """Minutes, or coarser buckets of whole minutes over a span longer than POINTS minutes."""
    span = client.command(
        "SELECT dateDiff('minute', min(minute), max(minute)) FROM sanlens_marts.tier0_fullness"
        " WHERE array = {a:String}",
        parameters={"a": array},
    )
    minutes = max(1, int(span) // POINTS + 1)
    return f"toStartOfInterval(minute, toIntervalMinute({minutes}))"


def warned_spans(rows: list[dict]) -> list[tuple]:
    """The runs of buckets at or above the warning level, as (first, last) times."""
    spans, start, previous = [], None, None
    for r in rows:
        if r["tier0_fill"] >= tiers.TIER0_WARNING_FILL and start is None:
            start = r["time"]
        elif r["tier0_fill"] < tiers.TIER0_WARNING_FILL and start is not None:
            spans.append((start, previous))
            start = None
        previous = r["time"]
    return spans + ([(start, previous)] if start is not None else [])


def array_chart(client, array: str) -> go.Figure:
    bucket = bucket_of(client, array)
    query = lambda sql: list(client.query(sql, parameters={"array": array}).named_results())  # noqa: E731
    fills = query(tiers.tier0_fill(bucket, "array = {array:String}"))
    fig = make_subplots(
        rows=4,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=("Tier 0 fill", "IOPS per tier", "Service time per tier (ms, log)", "Share of the writes"),
    )
    fig.add_scatter(x=[r["time"] for r in fills], y=[r["tier0_fill"] for r in fills], name="Tier 0 fill", row=1, col=1)
    fig.add_hline(
        y=tiers.TIER0_WARNING_FILL,
        line_dash="dash",
        line_color="red",
        annotation_text=f"warning level {tiers.TIER0_WARNING_FILL:.0%}",
        annotation_position="bottom right",
        row=1,
        col=1,
    )
    spans = warned_spans(fills)
    for first, last in spans:
        fig.add_vrect(x0=first, x1=last + timedelta(minutes=1), fillcolor="red", opacity=0.12, line_width=0)
    for row, measure in ((2, "iops"), (3, "service_ms"), (4, "write_share")):
        rows = query(tiers.per_tier(measure, bucket, ONE_ARRAY))
        for tier, name in tiers.TIER_NAMES.items():
            mine = [r for r in rows if r["series"].endswith(name)]
            fig.add_scatter(
                x=[r["time"] for r in mine],
                y=[r[measure] for r in mine],
                name=name,
                legendgroup=name,
                showlegend=row == 2,
                line_color=DEFAULT_PLOTLY_COLORS[tier + 1],
                row=row,
                col=1,
            )
    fig.update_yaxes(tickformat=".0%", range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(title_text="IOPS", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(log_ms_axis(title_text="ms", range=[-1, 2]), row=3, col=1)  # SSD's tenths of a ms to SAS's tens
    fig.update_yaxes(tickformat=".0%", range=[0, 1.05], row=4, col=1)
    warned = f": Tier 0 past its warning level from {spans[0][0]:%Y-%m-%d %H:%M}" if spans else ""
    fig.update_layout(title=f"Tiers of {array}{warned}", height=950, legend_orientation="h", legend_y=-0.05)
    return fig


def charts(client, said_empty) -> dict[str, go.Figure]:
    arrays = list(client.query(tiers.FULLEST_ARRAYS, parameters={"top": ARRAYS}).named_results())
    if not arrays:
        return {"tiers": said_empty(go.Figure(layout_title_text="Tiers"), "No hybrid array has reported its tiers.")}
    return {f"tiers-{a['array']}": array_chart(client, a["array"]) for a in arrays}

"""breakdown: normalized samples (telemetry.samples) joined along the topology (inventory.topology) ->
per window, path and direction the host's latency and its parts: host queueing, fabric, array and
unexplained (telemetry.breakdown); and the incidents, where a contributor's part on a component stays
above its learnt baseline (telemetry.incidents). Method, assumptions and error: flink-jobs/breakdown/README.md."""

from argparse import Namespace
from dataclasses import fields

from flink_jobs.breakdown import tables
from flink_jobs.common import runtime
from ingest import topics

JOB = "breakdown"
# One subtask per operator keeps each path's windows in order through the joins (at 2, a path's windows are
# hashed to different subtasks by their window and may cross), which the incident detector relies on.
PARALLELISM = 1
HELP = {
    "window_s": "window length in seconds: the sources' collection interval",
    "host_interval_s": "the host agents' collection interval in seconds: I/Os = rate x interval",
    "min_ios": "I/Os a window needs in one direction to be broken down",
    "host_stack_us": "the host stack's own latency in us",
    "hop_us": "nominal latency of a switch hop in us",
    "km_us": "nominal latency of a km of fibre in us",
    "hba_busy": "HBA occupancy (outstanding / queue depth) from which the HBA counts as congested",
    "port_stall": "share of time at zero transmit credit from which a switch port counts as stalling",
    "history_windows": "incidents: normal windows a component's baseline is learnt from",
    "warmup_windows": "incidents: normal windows a component needs before any verdict",
    "quantile": "incidents: the quantile of the history that is the baseline",
    "relative_margin": "incidents: how far above the baseline a window must be, as a share of it",
    "absolute_margin_us": "incidents: how far above the baseline a window must be, at least, in us",
    "open_after": "incidents: windows above the baseline in a row that open an incident",
    "close_after": "incidents: normal windows in a row that close it",
}
DETECTOR_CLASS = "io.sanlens.breakdown.DetectIncidents"
# A window's path versions and parts meet in one keyed function (join_window_parts), no longer in a join with the
# inventory and four interval joins.
STATE_LAYOUT = "window-parts-3"
OPTIONS = [
    (("--input",), {"default": topics.SAMPLES, "help": "topic of normalized samples"}),
    (("--topology",), {"default": topics.TOPOLOGY, "help": "topic of the inventory"}),
    (("--output-prefix",), {"help": "write PREFIX.breakdown and PREFIX.incidents instead of the contract's topics"}),
] + [
    (
        (f"--{f.name.replace('_', '-')}",),
        {"type": type(f.default), "default": f.default, "help": f"{HELP[f.name]} ({f.default})"},
    )
    for f in fields(tables.Method) + fields(tables.Incidents)
]


def statements(env, args):
    """The job's sources, views and sinks registered in `env`; its INSERTs as a statement set."""
    method = tables.Method(**{f.name: getattr(args, f.name) for f in fields(tables.Method)})
    detection = tables.Incidents(**{f.name: getattr(args, f.name) for f in fields(tables.Incidents)})
    env.get_config().set("table.exec.state.ttl", tables.SAMPLE_WAIT)
    env.execute_sql(tables.samples(runtime.kafka_options(args, JOB, args.input)))
    # The inventory is read whole at every start: a path published once holds until its next version.
    inventory = Namespace(**{**vars(args), "from_earliest": True})
    env.execute_sql(tables.topology(runtime.kafka_options(inventory, JOB, args.topology)))
    env.execute_sql(tables.sink(runtime.kafka_sink(args, JOB)))
    env.execute_sql(tables.incidents_sink(runtime.kafka_sink(args, JOB)))
    env.create_java_temporary_function("join_window_parts", tables.PARTS_CLASS)
    env.create_java_temporary_function("detect_incidents", DETECTOR_CLASS)
    views = {
        **tables.views(method),
        "window_parts": tables.WINDOW_PARTS,
        "path_windows": tables.path_windows(method),
        "incident_windows": tables.INCIDENT_WINDOWS,
    }
    for name, query in views.items():
        env.create_temporary_view(name, env.sql_query(query))
    inserts = env.create_statement_set()
    inserts.add_insert_sql(tables.INSERT_BREAKDOWN)
    inserts.add_insert_sql(tables.insert_incidents(detection, method.window_s))
    return inserts


def main() -> None:
    args = runtime.arguments(__doc__, OPTIONS, PARALLELISM)
    runtime.run_until_stopped(statements(runtime.table_env(JOB, args, state_layout=STATE_LAYOUT), args).execute())


if __name__ == "__main__":
    main()

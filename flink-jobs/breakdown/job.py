"""breakdown: normalized samples (telemetry.samples) joined along the topology (inventory.topology) ->
per window, path and direction the host's latency and its parts: host queueing, fabric, array and
unexplained (telemetry.breakdown). Method, assumptions and error: flink-jobs/breakdown/README.md."""

from argparse import Namespace
from dataclasses import fields

from flink_jobs.breakdown import tables
from flink_jobs.common import runtime
from ingest import topics

JOB = "breakdown"
HELP = {
    "window_s": "window length in seconds: the sources' collection interval",
    "host_interval_s": "the host agents' collection interval in seconds: I/Os = rate x interval",
    "min_ios": "I/Os a window needs in one direction to be broken down",
    "host_stack_us": "the host stack's own latency in us",
    "hop_us": "nominal latency of a switch hop in us",
    "km_us": "nominal latency of a km of fibre in us",
    "hba_busy": "HBA occupancy (outstanding / queue depth) from which the HBA counts as congested",
    "port_stall": "share of time at zero transmit credit from which a switch port counts as stalling",
}
OPTIONS = [
    (("--input",), {"default": topics.SAMPLES, "help": "topic of normalized samples"}),
    (("--topology",), {"default": topics.TOPOLOGY, "help": "topic of the inventory"}),
    (("--output-prefix",), {"help": "write PREFIX.breakdown instead of the contract's topic (tests)"}),
] + [
    (
        (f"--{f.name.replace('_', '-')}",),
        {"type": type(f.default), "default": f.default, "help": f"{HELP[f.name]} ({f.default})"},
    )
    for f in fields(tables.Method)
]


def statements(env, args):
    """The job's sources, views and sink registered in `env`; its INSERT as a statement set."""
    method = tables.Method(**{f.name: getattr(args, f.name) for f in fields(tables.Method)})
    env.get_config().set("table.exec.state.ttl", tables.SAMPLE_TTL)
    env.execute_sql(tables.samples(runtime.kafka_options(args, JOB, args.input)))
    # The inventory is read whole at every start: a path published once holds until its next version.
    inventory = Namespace(**{**vars(args), "from_earliest": True})
    env.execute_sql(tables.topology(runtime.kafka_options(inventory, JOB, args.topology)))
    env.execute_sql(tables.sink(args.kafka, args.output_prefix))
    for name, query in tables.views(method).items():
        env.create_temporary_view(name, env.sql_query(query))
    inserts = env.create_statement_set()
    inserts.add_insert_sql(tables.insert_breakdown(method))
    return inserts


def main() -> None:
    args = runtime.arguments(__doc__, OPTIONS)
    runtime.run_until_stopped(statements(runtime.table_env(JOB, args), args).execute())


if __name__ == "__main__":
    main()

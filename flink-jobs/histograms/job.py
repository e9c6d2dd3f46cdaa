"""histograms: array service-time bucket deltas and host disk interval averages (telemetry.samples) ->
service-time histograms per window on the 3PAR bounds (telemetry.histograms)."""

from flink_jobs.common import runtime
from flink_jobs.histograms import tables
from ingest import topics

JOB = "histograms"
OPTIONS = [
    (("--input",), {"default": topics.SAMPLES, "help": "topic of normalized samples"}),
    (("--output-prefix",), {"help": "write PREFIX.histograms instead of the contract's topic (tests)"}),
    (("--window",), {"type": int, "default": 10, "help": "window length in seconds (default 10)"}),
    (
        ("--host-interval",),
        {"type": int, "default": 10, "help": "the host agents' collection interval in seconds: I/Os = rate x interval"},
    ),
]


def statements(env, args):
    """The job's source and sinks registered in `env`; its INSERTs as a statement set."""
    env.execute_sql(tables.samples(runtime.kafka_options(args, JOB, args.input)))
    for ddl in tables.sinks(runtime.kafka_sink(args, JOB)):
        env.execute_sql(ddl)
    inserts = env.create_statement_set()
    inserts.add_insert_sql(tables.insert_histograms(args.window))
    inserts.add_insert_sql(tables.insert_host_histograms(args.window, args.host_interval))
    return inserts


def main() -> None:
    args = runtime.arguments(__doc__, OPTIONS)
    runtime.run_until_stopped(statements(runtime.table_env(JOB, args), args).execute())


if __name__ == "__main__":
    main()

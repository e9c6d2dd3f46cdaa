"""normalize: raw Telegraf metrics (telemetry.metrics) -> canonical samples (telemetry.samples),
dead letters (telemetry.deadletter) and per-window accounting (telemetry.accounting)."""

from flink_jobs.common import runtime
from flink_jobs.normalize import functions, tables
from ingest import topics

JOB = "normalize"
# Its samples become visible at its checkpoints (exactly-once output), and a sample's way to ClickHouse crosses
# this job only: a checkpoint every 2 s rather than the jobs' 10 s. Its state is one value per series.
CHECKPOINT_INTERVAL = "2 s"
# Its state stays on the heap: one value per series, bounded by the fleet and not by any backlog, and read for
# every sample. In RocksDB the samples' way at 1,000 arrays × 10 s was queryable 42 s after the last interval
# instead of 8 (docs/benchmarks.md, "The analytics at install-base scale").
STATE_BACKEND = "hashmap"
OPTIONS = [
    (("--input",), {"default": topics.METRICS, "help": "topic of raw Telegraf JSON"}),
    (("--output-prefix",), {"help": "write PREFIX.samples, .deadletter, .accounting instead of the contract's topics"}),
]


def statements(env, args):
    """The job's sources, views and sinks registered in `env`; its three INSERTs as one statement set."""
    functions.register(env, runtime.state_dir(JOB))
    env.execute_sql(tables.raw_metrics(runtime.kafka_options(args, JOB, args.input)))
    for ddl in tables.sinks(runtime.kafka_sink(args, JOB)):
        env.execute_sql(ddl)
    for name, query in tables.views(args.bounded).items():
        env.create_temporary_view(name, env.sql_query(query))
    inserts = env.create_statement_set()
    for insert in (tables.INSERT_SAMPLES, tables.INSERT_DEADLETTERS, tables.INSERT_ACCOUNTING):
        inserts.add_insert_sql(insert)
    return inserts


def main() -> None:
    args = runtime.arguments(__doc__, OPTIONS)
    env = runtime.table_env(JOB, args, CHECKPOINT_INTERVAL, STATE_BACKEND)
    runtime.run_until_stopped(statements(env, args).execute())


if __name__ == "__main__":
    main()

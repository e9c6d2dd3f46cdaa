"""normalize: raw Telegraf metrics (telemetry.metrics) -> canonical samples (telemetry.samples),
dead letters (telemetry.deadletter) and per-window accounting (telemetry.accounting)."""

from flink_jobs.common import runtime
from flink_jobs.normalize import functions, tables
from ingest import topics

JOB = "normalize"


def main() -> None:
    args = runtime.arguments(
        __doc__,
        [
            (("--input",), {"default": topics.METRICS, "help": "topic of raw Telegraf JSON"}),
            (
                ("--output-prefix",),
                {"help": "write PREFIX.samples, .deadletter, .accounting instead of the contract's topics"},
            ),
        ],
    )
    env = runtime.table_env(JOB, args)
    env.create_temporary_function("decode_record", functions.decode_record)
    env.execute_sql(tables.raw_metrics(runtime.kafka_options(args, JOB, args.input)))
    for ddl in tables.sinks(args.kafka, args.output_prefix):
        env.execute_sql(ddl)
    for view in (tables.DECODED, tables.SAMPLES, tables.PAIRED, tables.JUDGED, tables.OUTCOMES):
        env.execute_sql(view)
    statements = env.create_statement_set()
    for insert in (tables.INSERT_SAMPLES, tables.INSERT_DEADLETTERS, tables.INSERT_ACCOUNTING):
        statements.add_insert_sql(insert)
    runtime.run_until_stopped(statements.execute())


if __name__ == "__main__":
    main()

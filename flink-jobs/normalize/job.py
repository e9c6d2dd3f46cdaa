"""normalize: raw Telegraf metrics (telemetry.metrics) -> canonical samples (telemetry.samples),
dead letters (telemetry.deadletter) and per-window accounting (telemetry.accounting)."""
import sys
from pathlib import Path

JOBS_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(JOBS_DIR))

from common import runtime  # noqa: E402
from normalize import functions, tables  # noqa: E402

JOB = "normalize"


def main() -> None:
    args = runtime.arguments(__doc__, [
        (("--input",), {"default": "telemetry.metrics", "help": "topic of raw Telegraf JSON"}),
        (("--output-prefix",), {"default": "telemetry", "help": "writes PREFIX.samples, .deadletter, .accounting"})])
    env = runtime.table_env(JOB, args)
    env.add_python_file(str(JOBS_DIR / "normalize"))
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

"""histograms: array service-time bucket deltas (telemetry.samples) -> per-window service-time
histograms on the 3PAR bounds (telemetry.histograms), with the job's accounting (telemetry.accounting)."""
import sys
from pathlib import Path

JOBS_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(JOBS_DIR))

from common import runtime  # noqa: E402
from histograms import tables  # noqa: E402

JOB = "histograms"


def main() -> None:
    args = runtime.arguments(__doc__, [
        (("--input",), {"default": "telemetry.samples", "help": "topic of normalised samples"}),
        (("--output-prefix",), {"default": "telemetry", "help": "writes PREFIX.histograms and PREFIX.accounting"}),
        (("--window",), {"type": int, "default": 10, "help": "window length in seconds (default 10)"}),
        (("--lateness",), {"type": int, "default": 60,
                           "help": "seconds a sample may arrive behind the newest one before it counts as late"})])
    env = runtime.table_env(JOB, args)
    env.execute_sql(tables.samples(runtime.kafka_options(args, JOB, args.input), args.lateness))
    for ddl in tables.sinks(args.kafka, args.output_prefix):
        env.execute_sql(ddl)
    env.execute_sql(tables.BUCKET_SAMPLES)
    env.execute_sql(tables.ON_TIME)
    statements = env.create_statement_set()
    statements.add_insert_sql(tables.insert_histograms(args.window))
    statements.add_insert_sql(tables.insert_accounting(args.window))
    statements.add_insert_sql(tables.INSERT_LATE)
    runtime.run_until_stopped(statements.execute())


if __name__ == "__main__":
    main()

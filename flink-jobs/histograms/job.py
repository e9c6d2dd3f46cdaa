"""histograms: array service-time bucket deltas and host disk interval averages (telemetry.samples) ->
service-time histograms per window on the 3PAR bounds (telemetry.histograms)."""
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
        (("--output-prefix",), {"default": "telemetry", "help": "writes PREFIX.histograms"}),
        (("--window",), {"type": int, "default": 10, "help": "window length in seconds (default 10)"}),
        (("--host-interval",), {"type": int, "default": 10,
                                "help": "the host agents' collection interval in seconds: I/Os = rate x interval"})])
    env = runtime.table_env(JOB, args)
    env.get_config().set("table.exec.state.ttl", "10 min")   # the host join's state: latency meets its rate
    env.execute_sql(tables.samples(runtime.kafka_options(args, JOB, args.input)))
    for ddl in tables.sinks(args.kafka, args.output_prefix):
        env.execute_sql(ddl)
    statements = env.create_statement_set()
    statements.add_insert_sql(tables.insert_histograms(args.window))
    statements.add_insert_sql(tables.insert_host_histograms(args.window, args.host_interval))
    runtime.run_until_stopped(statements.execute())


if __name__ == "__main__":
    main()

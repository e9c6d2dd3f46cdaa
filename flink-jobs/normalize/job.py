"""normalize: raw Telegraf metrics (telemetry.metrics) -> one typed sample per field (telemetry.samples)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import runtime  # noqa: E402
from normalize import tables  # noqa: E402

JOB = "normalize"


def main() -> None:
    args = runtime.arguments(__doc__)
    env = runtime.table_env(JOB, args)
    env.execute_sql(tables.raw_metrics(runtime.kafka_options(args, JOB, "telemetry.metrics")))
    env.execute_sql(tables.samples(args.kafka))
    runtime.run_until_stopped(env.execute_sql(tables.FLATTEN))


if __name__ == "__main__":
    main()

"""tiering: normalized samples (telemetry.samples) -> per hybrid volume, the tier-migration episodes its Tier 0
share shows: when auto-tiering starts moving the volume's data, when the share settles and where
(telemetry.tier_episodes). Their effect on the array, the hosts and SQL Server is measured in the dbt mart
sanlens_marts.tier_migration_effects. Method and assumptions: flink-jobs/tiering/README.md."""

from dataclasses import fields

from flink_jobs.common import runtime
from flink_jobs.tiering import tables
from ingest import topics

JOB = "tiering"
# One subtask keeps each volume's windows in the order its array sent them, which the detector relies on.
PARALLELISM = 1
HELP = {
    "window_s": "window length in seconds: the arrays' collection interval",
    "history_windows": "windows of the baseline the share is compared with",
    "warmup_windows": "windows a volume needs before any verdict",
    "slack": "the CUSUM's slack, at least (share of capacity)",
    "threshold_noise": "the CUSUM's threshold, in standard deviations of the baseline",
    "noise_floor": "the baseline's noise, at least (share of capacity)",
    "min_shift": "the smallest move of the share reported as an episode (share of capacity)",
    "settle_windows": "windows over which a settled share moves no more than its noise",
    "settle_noise": "how far a settled share may move over those windows, in noise",
    "rejoin_windows": "windows after settling in which a move the same way re-opens the episode",
}
DETECTOR_CLASS = "io.sanlens.tiering.DetectEpisodes"
OPTIONS = [
    (("--input",), {"default": topics.SAMPLES, "help": "topic of normalized samples"}),
    (("--output-prefix",), {"help": "write PREFIX.tier_episodes instead of the contract's topic"}),
] + [
    (
        (f"--{f.name.replace('_', '-')}",),
        {"type": type(f.default), "default": f.default, "help": f"{HELP[f.name]} ({f.default})"},
    )
    for f in fields(tables.Episodes)
]


def statements(env, args):
    """The job's source, view and sink registered in `env`; its INSERT as a statement set."""
    episodes = tables.Episodes(**{f.name: getattr(args, f.name) for f in fields(tables.Episodes)})
    env.execute_sql(tables.samples(runtime.kafka_options(args, JOB, args.input)))
    env.execute_sql(tables.sink(runtime.kafka_sink(args, JOB)))
    env.create_java_temporary_function("detect_tier_episodes", DETECTOR_CLASS)
    env.create_temporary_view("tier_samples", env.sql_query(tables.tier_samples(episodes.window_s)))
    inserts = env.create_statement_set()
    inserts.add_insert_sql(tables.insert_episodes(episodes))
    return inserts


def main() -> None:
    args = runtime.arguments(__doc__, OPTIONS, PARALLELISM)
    runtime.run_until_stopped(statements(runtime.table_env(JOB, args), args).execute())


if __name__ == "__main__":
    main()

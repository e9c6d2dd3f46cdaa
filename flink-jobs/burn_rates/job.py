"""burn_rates: the array's service-time histograms (telemetry.histograms) and the paths' latency windows
(telemetry.breakdown), with the inventory (inventory.topology) -> per SLO of slo/slos.yaml, entity and window
the good and total I/Os (telemetry.slo_windows), and the multiwindow burn-rate alerts they raise, firing
and resolved (alerts.slo). Method and assumptions: flink-jobs/burn_rates/README.md."""

from argparse import Namespace

from flink_jobs.burn_rates import tables
from flink_jobs.common import runtime
from ingest import topics
from slo import definitions

JOB = "burn_rates"
# One subtask keeps each entity's windows in order through the joins and pair_volume_windows, which the evaluator
# relies on.
PARALLELISM = 1
EVALUATOR_CLASS = "io.sanlens.burnrates.EvaluateBurnRates"
# A volume's histogram and its path windows meet in one keyed function (pair_volume_windows) since issue 38, no
# longer in an interval join (whose state held a window's histogram as one row, "histogram-windows"): old
# checkpoints cannot be read into the function's state.
STATE_LAYOUT = "volume-windows-labelled"
OPTIONS = [
    (("--input",), {"default": topics.HISTOGRAMS, "help": "topic of service-time histograms"}),
    (("--breakdown",), {"default": topics.BREAKDOWN, "help": "topic of the paths' latency windows"}),
    (("--topology",), {"default": topics.TOPOLOGY, "help": "topic of the inventory"}),
    (("--slos",), {"help": "SLO definitions (default: SANLENS_SLOS, else slo/slos.yaml)"}),
    (("--output-prefix",), {"help": "write PREFIX.slo_windows and PREFIX.slo instead of the contract's topics"}),
]


def statements(env, args):
    """The job's sources, views and sinks registered in `env`; its INSERTs as a statement set."""
    slos = definitions.load(args.slos)
    env.get_config().set("table.exec.state.ttl", tables.JOIN_TTL)
    inventory = Namespace(**{**vars(args), "from_earliest": True})  # read whole at every start
    for ddl in tables.sources(
        runtime.kafka_options(args, JOB, args.input),
        runtime.kafka_options(args, JOB, args.breakdown),
        runtime.kafka_options(inventory, JOB, args.topology),
    ):
        env.execute_sql(ddl)
    for ddl in tables.sinks(runtime.kafka_sink(args, JOB)):
        env.execute_sql(ddl)
    env.create_java_temporary_function("evaluate_burn_rates", EVALUATOR_CLASS)
    for name, java_class in tables.FUNCTIONS.items():
        env.create_java_temporary_function(name, java_class)
    for name, query in {**tables.VIEWS, **tables.slo_views(slos)}.items():
        env.create_temporary_view(name, env.sql_query(query))
    inserts = env.create_statement_set()
    inserts.add_insert_sql(tables.INSERT_WINDOWS)
    inserts.add_insert_sql(tables.insert_alerts(slos))
    return inserts


def main() -> None:
    args = runtime.arguments(__doc__, OPTIONS, PARALLELISM)
    runtime.run_until_stopped(statements(runtime.table_env(JOB, args, state_layout=STATE_LAYOUT), args).execute())


if __name__ == "__main__":
    main()

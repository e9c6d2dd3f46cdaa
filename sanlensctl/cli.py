"""./sanlens: set up, run and test the sanlens pipeline on one machine."""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from sanlensctl import config, install, procs
from sanlensctl.errors import SanlensError
from sanlensctl.output import print_rows

COMMANDS = {
    "up": "start the local stack in the background, wait until healthy, print the endpoints",
    "status": "health of each component (--json for one JSON object)",
    "down": "stop every process of the stack by PID (--purge also deletes its data)",
    "logs": "print a component's log (kafka, clickhouse, flink-normalize, loader, inbox, alertmanager, ...)",
    "migrate": "apply ClickHouse schema migrations (clickhouse/migrations/)",
    "topics": "create the Kafka topics of the contract (ingest/topics.yaml) that are missing",
    "sql": "run a query on ClickHouse and print the result",
    "dbt": "run dbt on the project in dbt/ with the local profile, e.g. ./sanlens dbt build",
    "demo": "the main job: bring the stack up and run the pipeline on a simulated fleet",
    "report": "write the report (install base, latency, incidents, tier migrations, SLOs): HTML and a PNG per chart",
    "explain": "where a host's I/O time goes per path and direction: measured, each part and its share",
    "slo": "each latency SLO's attainment and error budget left per entity over its period, and what fires",
    "pages": "the pages and tickets Alertmanager sent to the local stack's inbox, as it got them, oldest first",
    "test": "lint, then run the test suite on a stack of its own (--keep keeps its data; other arguments go to pytest; "
    "test files named, e.g. tests/unit/test_units.py, go straight to pytest)",
}

PASSTHROUGH = {"test", "dbt"}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="sanlens", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for name, text in COMMANDS.items():
        sub.add_parser(name, help=text, description=text)
    sub.choices["status"].add_argument("--json", action="store_true")
    sub.choices["down"].add_argument("--purge", action="store_true", help="also delete the stack's data folders")
    sub.choices["logs"].add_argument("component", nargs="?", default=None)
    sub.choices["logs"].add_argument("-n", "--lines", type=int, default=50)
    sub.choices["sql"].add_argument("query")
    sub.choices["report"].add_argument("--out", required=True, help="folder for index.html and the PNGs")
    sub.choices["report"].add_argument("--top", type=int, default=20, help="volumes in the p99 chart (default 20)")
    sub.choices["report"].add_argument(
        "--hosts", type=int, default=4, help="hosts with a latency breakdown chart: those incidents touched most (4)"
    )
    sub.choices["sql"].add_argument("--format", choices=["table", "csv", "json"], default="table")
    sub.choices["sql"].add_argument(
        "--as",
        dest="role",
        metavar="ROLE",
        help="run it as a role's user: analyst, dashboards, ingest, customer_NAME (or a customer's name): what that "
        "user would see (clickhouse/access/roles.yaml; default: the admin)",
    )
    sub.choices["pages"].add_argument("--limit", type=int, default=50, help="the last LIMIT alerts (50)")
    sub.choices["pages"].add_argument("--format", choices=["table", "csv", "json"], default="table")
    sub.choices["dbt"].add_argument("args", nargs=argparse.REMAINDER)
    sub.choices["test"].add_argument("args", nargs=argparse.REMAINDER)
    sub.choices["slo"].add_argument("--limit", type=int, default=20, help="entities per SLO, least budget first (20)")
    explain = sub.choices["explain"]
    explain.add_argument("target", metavar="HOST[:DISK]")
    times = "UTC: 2026-11-27T16:13 (ISO 8601), 16:13 (on the day of --to), or -30m, -2h, -1d (back from --to)"
    explain.add_argument("--from", dest="start", type=_time, help=f"{times} (default: an hour before --to)")
    explain.add_argument("--to", dest="end", type=_time, help=f"{times} (default: the host's last window)")
    demo = sub.choices["demo"]
    demo.add_argument(
        "--scenario",
        type=Path,
        default=config.ROOT / "ingest" / "scenarios" / "demo.yaml",
        help="scenario file (default ingest/scenarios/demo.yaml: all five scenarios on a small fleet)",
    )
    demo.add_argument(
        "--duration",
        type=float,
        help="wall-clock seconds to play (default: the scenario's duration divided by --speed)",
    )
    demo.add_argument("--speed", type=float, default=10, help="simulated seconds per second (default 10)")
    demo.add_argument(
        "--backfill",
        action="store_true",
        help="produce the scenario's whole span straight to Kafka as fast as possible (no Telegraf)",
    )
    demo.add_argument(
        "--stall-timeout",
        type=float,
        default=120,
        metavar="S",
        help="give up when no stage of the pipeline has advanced for S seconds (default 120)",
    )
    return ap


def _times_back_joined(argv: list[str]) -> list[str]:
    """`--from -30m` as `--from=-30m`: argparse takes a value that starts with a dash for an option of its own."""
    out = []
    for arg in argv:
        if out and out[-1] in ("--from", "--to") and re.fullmatch(r"-\d+(?:\.\d+)?[smhd]", arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    logging.getLogger("clickhouse_connect").setLevel(logging.CRITICAL)  # probes report failures themselves
    argv = sys.argv[1:] if argv is None else argv
    ap = parser()
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        close = difflib.get_close_matches(argv[0], COMMANDS, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        print(
            f"sanlens: error: unknown command '{argv[0]}': {hint}choose one of {', '.join(COMMANDS)} "
            "(./sanlens --help)",
            file=sys.stderr,
        )
        return 2
    if argv and argv[0] in PASSTHROUGH and not {"-h", "--help"} & set(argv[1:2]):
        args = argparse.Namespace(command=argv[0], args=argv[1:])  # pytest's and dbt's own flags, untouched
    else:
        args = ap.parse_args(_times_back_joined(argv))
    if not args.command:
        ap.print_help()
        return 0
    try:
        return globals()[f"cmd_{args.command}"](args) or 0
    except SanlensError as err:
        print(f"sanlens: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `./sanlens slo | head`: the reader has what it wanted; no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def cmd_up(args) -> int:
    from sanlensctl import stack

    report = stack.up()
    print_status(report)
    print("\nendpoints:")
    for name, where in stack.endpoints().items():
        print(f"  {name:<12} {where}")
    return 0 if all(c["healthy"] for c in report.values()) else 1


def cmd_status(args) -> int:
    from sanlensctl import stack

    report = stack.status()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_status(report)
    return 0 if all(c["healthy"] for c in report.values()) else 1


def print_status(report: dict) -> None:
    for name, c in report.items():
        state = "healthy" if c["healthy"] else ("UNHEALTHY" if c["pid"] else "stopped")
        state = {"restarting": "restarting", "failing": "FAILING"}.get(c.get("supervision"), state)
        detail = c["detail"]
        if c.get("last_exit"):
            e = c["last_exit"]
            detail += f" [restarts {c['restarts']}, last exit {e['time']} {e['process']}: {e['status']}]"
        memory = f"{c['memory_mib']:,} MiB" if c["memory_mib"] else "-"
        print(
            f"{name:<12} {state:<10} pid {str(c['pid'] or '-'):<8} port {str(c['port'] or '-'):<6} "
            f"{c['version'] or '':<10} {memory:>9}  {detail}"
        )
    total = sum(c["memory_mib"] for c in report.values())
    print(f"resident memory of the stack: {total:,} MiB")


def cmd_down(args) -> int:
    from sanlensctl import stack

    stopped = stack.down(purge=args.purge)
    print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
    if args.purge:
        print(f"deleted {config.RUN}")
    return 0


def cmd_logs(args) -> int:
    names = sorted(p.stem for p in config.LOGS.glob("*.log")) if config.LOGS.exists() else []
    if args.component is None:
        print("logs: " + (", ".join(names) or "none yet") + f"  ({config.LOGS})")
        return 0
    matches = [n for n in names if n == args.component or n.startswith(args.component + "-")]
    if not matches:
        raise SanlensError(f"no log for '{args.component}': choose one of {', '.join(names) or 'none yet'}")
    for name in matches:
        lines = procs.log_file(name).read_text(errors="replace").splitlines()[-args.lines :]
        print(f"==> {procs.log_file(name)} <==")
        print("\n".join(lines))
    return 0


def cmd_migrate(args) -> int:
    from sanlensctl import migrate

    try:
        applied = migrate.apply()
    except SanlensError:
        raise
    except Exception as exc:
        raise SanlensError(
            f"cannot reach ClickHouse at {config.CLICKHOUSE_URL} ({str(exc).splitlines()[0][:120]}): "
            "start the stack with ./sanlens up"
        ) from exc
    print("schema is up to date" if not applied else f"{len(applied)} migration(s) applied")
    return 0


def cmd_topics(args) -> int:
    from sanlensctl import topics

    try:
        created = topics.ensure()
    except Exception as exc:
        raise SanlensError(f"cannot create the topics at {config.KAFKA_BOOTSTRAP}: {str(exc)[:200]}") from exc
    print(f"topics created: {', '.join(created)}" if created else "every topic of the contract exists")
    return 0


def cmd_sql(args) -> int:
    from sanlensctl import db

    user = _role_user(args.role) if args.role else None
    try:
        client = db.client(user=user)
    except Exception as exc:
        if "Code: 516" in str(exc):
            refused = str(exc).split("Code: 516. ")[-1][:200]
            raise SanlensError(f"ClickHouse refused the user {user}: {refused}") from exc
        raise SanlensError(
            f"cannot reach ClickHouse at {config.CLICKHOUSE_URL}: start the stack with ./sanlens up"
        ) from exc
    try:
        result = client.query(args.query)
    except Exception as exc:
        # clickhouse-connect asks for its wire format after the query: an error's excerpt is not to show it
        said = str(exc).split("server response: ")[-1].split(" (for url")[0]
        said = re.sub(r"\s*FORMAT Native\b", "", said)
        raise SanlensError(said.strip()) from exc
    print_rows(result.column_names, result.result_rows, args.format)
    return 0


def _role_user(name: str) -> str:
    """The user of the role `name` (a customer's name works too); an unknown one is refused before a password is
    made for it."""
    from clickhouse import roles
    from sanlensctl import db

    try:
        known = {roles.admin(), *roles.roles(roles.customers(db.client()))}
    except Exception as exc:
        raise SanlensError(
            f"cannot reach ClickHouse at {config.CLICKHOUSE_URL}: start the stack with ./sanlens up"
        ) from exc
    user = name if name in known else roles.customer_role(name)
    if user not in known:
        raise SanlensError(f"unknown role {name!r}: the roles are {', '.join(sorted(known))} (or a customer's name)")
    roles.password(user)  # made now if it is the first time: the server reads the passwords file again
    return user


def cmd_dbt(args) -> int:
    from sanlensctl import dbt_project

    return dbt_project.run(*(args.args or ["build"]), check=False)


def cmd_demo(args) -> int:
    from sanlensctl import demo

    return demo.run(args)


def cmd_report(args) -> int:
    from sanlensctl import report

    install.require_chromium()
    return report.write(Path(args.out), top=args.top, hosts=args.hosts)


def _time(text: str) -> str:
    """--from and --to as `explain` reads them; an error that names the forms it reads otherwise."""
    from sanlensctl import explain

    try:
        return explain.checked_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_slo(args) -> int:
    from sanlensctl import slos

    slos.show(args.limit)
    return 0


def cmd_pages(args) -> int:
    from sanlensctl import pages

    found = pages.rows(args.limit)
    if not found:
        print(f"no page or ticket in the inbox ({config.INBOX_FILE}) yet: Alertmanager sends one when an SLO burns")
        return 0
    print_rows(pages.COLUMNS, found, args.format)
    return 0


def cmd_explain(args) -> int:
    from sanlensctl import explain

    return explain.run(args.target, args.start, args.end)


def cmd_test(args) -> int:
    """The suite runs on a stack of its own (config.TEST_RUN, free ports), started and stopped by the whole suite's
    run (suite.py) or else by the tests' session fixture; the user's stack, up or not, is never touched. --keep
    keeps the test stack's data."""
    from sanlensctl import stack, suite

    install.everything()  # in place, a no-op (0.04 s: each part checks its stamp)
    install.require_chromium()
    pytest_args = [a for a in args.args if a != "--keep"]
    named = _test_paths(pytest_args)
    missing = [a for a in pytest_args if a.split("::")[0].endswith(".py") and a not in named]
    if missing:
        raise SanlensError(f"no such test file: {', '.join(missing)} (test files are in tests/unit/ and tests/stack/)")
    whole = not named and not any(a.startswith(("-k", "-m")) for a in pytest_args)  # the whole suite, in its phases
    if whole:  # a subset (files, folders, node ids, -k, -m) goes straight to pytest
        # the JUnit tests of the jobs' Java run beside the lint (in seconds), in a folder of the test run's own
        java = install.JavaTests(config.TEST_RUN.parent / f"{config.TEST_RUN.name}-java").start()
        _lint()
        print(f"==> {java.finish()}", file=sys.stderr, flush=True)
    if stack.running() and not _unit_tests_only(named):  # the unit tests start no stack
        print(
            f"==> your stack ({config.RUN}) is up and stays untouched: the tests start their own in {config.TEST_RUN}",
            file=sys.stderr,
            flush=True,
        )
    warning = _memory_warning(14 if whole else 5)  # two test stacks and the tests' JVMs at the suite's peak
    if warning:
        print(f"==> {warning}", file=sys.stderr, flush=True)
    pytest = [
        sys.executable,
        "-m",
        "pytest",
        *([] if named else [str(config.ROOT / "tests")]),
        "-p",
        "no:cacheprovider",
    ]
    tmp = config.TEST_RUN.parent / f"{config.TEST_RUN.name}-tmp"  # the tests' own JVMs and temp files
    tmp.mkdir(parents=True, exist_ok=True)
    if whole:
        config.FREE_PORTS = suite.PORT_SLICES[suite.STACKS]
    jit = os.environ.get("SANLENS_JIT", "quick")  # many short-lived JVMs on two cores: compiled by C1 alone
    # Two test stacks share the cores: at nice 19 (a weight of 15 against 1,024) one stack's analytics starve while
    # the other's ingest path and tests are busy; at nice 5 (335) they still come after their own stack's ingest.
    analytics_nice = os.environ.get("SANLENS_ANALYTICS_NICE", "5")
    env = {
        **{k: v for k, v in os.environ.items() if k not in suite.VARIABLES},
        **config.isolated_env(config.TEST_RUN),
        "SANLENS_TEST_KEEP": str(int("--keep" in args.args)),
        "SANLENS_JIT": jit,
        "SANLENS_ANALYTICS_NICE": analytics_nice,
        "TMPDIR": str(tmp),
        "JVM_ARGS": config.pyflink_jvm_args(tmp, jit=jit),
    }
    if whole:
        return suite.run(pytest, pytest_args, env, keep="--keep" in args.args)
    basetemp = ["--basetemp", str(config.TEST_RUN.parent / f"{config.TEST_RUN.name}-pytest")]
    return subprocess.call([*pytest, *basetemp, *pytest_args], env=env, cwd=config.ROOT)


def _test_paths(pytest_args: list[str]) -> list[str]:
    """The arguments that name test folders, files or node ids (tests/unit/test_units.py::test_x)."""
    return [a for a in pytest_args if not a.startswith("-") and Path(a.split("::")[0]).exists()]


def _unit_tests_only(named: list[str]) -> bool:
    unit = config.ROOT / "tests" / "unit"
    return bool(named) and all(Path(a.split("::")[0]).resolve().is_relative_to(unit) for a in named)


def _lint() -> None:
    """ruff and SQLFluff over the project, before the whole suite (a subset skips them)."""
    for lint, fix in ((["check", "."], "check --fix ."), (["format", "--check", "."], "format .")):
        if subprocess.call([sys.executable, "-m", "ruff", *lint], cwd=config.ROOT) != 0:
            raise SanlensError(f"ruff {' '.join(lint)} found problems (above): .sanlens/venv/bin/ruff {fix} fixes many")
    if subprocess.call([sys.executable, "-m", "sqlfluff", "lint", "dbt/models", "dbt/tests"], cwd=config.ROOT) != 0:
        raise SanlensError(
            "sqlfluff found problems (above): .sanlens/venv/bin/sqlfluff fix dbt/models dbt/tests fixes many"
        )


def _memory_warning(needed_gib: float) -> str:
    available = next(int(line.split()[1]) / 2**20 for line in open("/proc/meminfo") if line.startswith("MemAvailable"))
    return (
        ""
        if available >= needed_gib
        else (
            f"only {available:.1f} GiB of memory is available and these tests need about {needed_gib:g} at their "
            "peak: running anyway, expect swapping or failures"
        )
    )

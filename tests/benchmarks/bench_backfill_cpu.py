"""Where the two cores go during the README's 200-array backfill: runs `./sanlens demo --scenario
ingest/scenarios/firmware-rollout.yaml --backfill` on the running stack (`./sanlens up` first) and prints the
CPU seconds each of the stack's processes spent meanwhile (their process groups, from /proc), next to the
demo's wall-clock time.

    .sanlens/venv/bin/python -m tests.benchmarks.bench_backfill_cpu [--scenario F]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from sanlensctl import procs, stack
from tests.support import ROOT

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_by_process() -> dict[str, float]:
    """CPU seconds so far (user and system, with reaped children) of each process of the stack, with the rest
    of its process group: `procs.start` makes each one a group leader, and a Flink job's JVM is in its group."""
    by_group: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        by_group[int(fields[2])] = by_group.get(int(fields[2]), 0.0) + sum(map(int, fields[11:15])) / TICKS
    return {
        name: by_group.get(procs.pid_of(name) or -1, 0.0)
        for component in stack.COMPONENTS
        for name in component.PROCESSES
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default=str(ROOT / "ingest" / "scenarios" / "firmware-rollout.yaml"))
    args = ap.parse_args()
    before = cpu_by_process()
    t0 = time.monotonic()
    own = resource.getrusage(resource.RUSAGE_CHILDREN)
    demo = subprocess.run([str(ROOT / "sanlens"), "demo", "--scenario", args.scenario, "--backfill"], cwd=ROOT)
    wall = time.monotonic() - t0
    spent = {name: s - before.get(name, 0.0) for name, s in cpu_by_process().items()}
    done = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent["demo (the simulator)"] = done.ru_utime + done.ru_stime - own.ru_utime - own.ru_stime
    print(f"\n{'process':<24}{'CPU s':>10}")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"{name:<24}{s:>10.1f}")
    print(f"{'all':<24}{sum(spent.values()):>10.1f}")
    print(f"demo: exit {demo.returncode}, {wall:.0f} s wall clock ({2 * wall:.0f} core-seconds on 2 cores)")
    sys.exit(demo.returncode)


if __name__ == "__main__":
    main()

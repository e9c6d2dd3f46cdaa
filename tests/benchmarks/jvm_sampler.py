"""Where a JVM spends its time: its runnable threads' stacks sampled with jstack, the most frequent frames printed.

    .sanlens/venv/bin/python -m tests.benchmarks.jvm_sampler PID [--seconds 30] [--every 0.2] [--depth 12]

A poor man's profiler for the Flink jobs (no agent to install): each sample is one `jstack PID`; per thread,
the share of samples it was RUNNABLE, then the deepest frames of sanlens', Flink's or RocksDB's code that the
busy threads were in, counted over all samples.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import time

THREAD = re.compile(r'^"(?P<name>[^"]+)".*?\n\s+java\.lang\.Thread\.State: (?P<state>\w+)', re.M)
IDLE = ("sun.nio.ch", "java.net.", "jdk.internal.misc.Unsafe.park", "java.lang.Object.wait", "java.lang.Thread.sleep")


def threads(pid: int) -> list[tuple[str, list[str]]]:
    """The RUNNABLE threads of `pid` that are not waiting on I/O: (name, frames from the top)."""
    out = subprocess.run(["jstack", str(pid)], capture_output=True, text=True, timeout=30).stdout
    found = []
    for block in out.split("\n\n"):
        m = THREAD.search(block)
        if not m or m["state"] != "RUNNABLE":
            continue
        frames = [line.strip()[3:] for line in block.splitlines() if line.strip().startswith("at ")]
        if frames and not frames[0].startswith(IDLE):
            found.append((re.sub(r"\s*\(\d+/\d+\)#\d+|\d+$", "", m["name"]), frames))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pid", type=int)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--every", type=float, default=0.2)
    ap.add_argument("--depth", type=int, default=12, help="frames from the top that make a stack's signature")
    args = ap.parse_args()
    busy, stacks, frames, samples = collections.Counter(), collections.Counter(), collections.Counter(), 0
    end = time.time() + args.seconds
    while time.time() < end:
        try:
            sampled = threads(args.pid)
        except (subprocess.SubprocessError, OSError):
            break
        samples += 1
        for name, stack in sampled:
            busy[name] += 1
            stacks[(name, tuple(f.split("(")[0] for f in stack[: args.depth]))] += 1
            for f in {f.split("(")[0] for f in stack}:
                frames[f] += 1
        time.sleep(args.every)
    print(f"{samples} samples of pid {args.pid}")
    print("\nbusy threads (share of samples RUNNABLE):")
    for name, n in busy.most_common(15):
        print(f"  {n / samples:6.1%}  {name}")
    print("\nframes on the busy threads' stacks (share of samples):")
    for f, n in frames.most_common(60):
        print(f"  {n / samples:6.1%}  {f}")
    print("\ntop stacks:")
    for (name, stack), n in stacks.most_common(8):
        print(f"  {n / samples:6.1%}  {name}\n        " + "\n        ".join(stack))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

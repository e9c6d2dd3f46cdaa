"""The whole test suite as `./sanlens test` runs it: pytest processes side by side, since the stack tests mostly wait
on a stack, on two test stacks. Which stack test runs where: tests/shards.py.

- `alone`: the tests marked `exclusive` (they stop, kill or pause part of a stack, or bound its lag), one after
  the other on a stack of their own, which that process starts and stops (conftest.py checks `up` and `down`);
- `no stack`: the tests that need none, while the shared stack starts;
- `side 1`, `side 2`: the other stack tests, their files split in two, on the shared stack; then the run stops it.

Each process's lines are printed as they come, prefixed with its name."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from sanlensctl import config

# what the processes tell the tests' conftest.py; a test that runs `./sanlens test` itself does not pass them on
VARIABLES = ("SANLENS_TEST_STACK_UP", "SANLENS_TEST_PROCESS")
ALONE = "alone"
SIDES = ("side 1", "side 2")  # the shared stack's processes; tests/shards.py lists their files
NO_TESTS = 5  # pytest's exit status when a process selects nothing (a -k that matches none of its tests)
# The run's two stacks take their ports from the first slice of the free ports, each pytest process its free
# ports from a slice of its own: a test's free port is then never a port of a stack that is down a moment (the
# alone process's `down` and `up` found its Flink REST port taken by another process's test).
STACKS = "stacks"
PORT_SLICES = dict(zip((STACKS, "no stack", *SIDES, ALONE), config.port_slices(2 + len(SIDES) + 1)))


def run(pytest: list[str], args: list[str], env: dict[str, str], keep: bool) -> int:
    """`pytest` the command up to its arguments, `args` the user's, `env` the shared test stack's environment."""
    alone = config.TEST_RUN.with_name(f"{config.TEST_RUN.name.removesuffix('-test')}-alone-test")
    log = config.TEST_RUN.parent / f"{config.TEST_RUN.name}-up.log"
    began, results = time.monotonic(), {}
    with open(log, "w") as out:
        starting = start_empty_stack(stdout=out, env=env)
    _say(f"the shared test stack is starting in {config.TEST_RUN} (log: {log}); the exclusive tests get {alone}")
    relay, alone_env = Relay(), {**env, **config.isolated_env(alone)}
    try:
        relay.start(ALONE, [*pytest, "-m", "stack", *args], {**alone_env, **_process(ALONE)})
        results["no stack"] = relay.wait(relay.start("no stack", [*pytest, "-m", "not stack", *args], env))
        try:
            came_up = starting.wait(timeout=900) == 0
        except subprocess.TimeoutExpired:
            came_up = False
        if not came_up:
            _say(f"the shared test stack did not come up:\n{log.read_text()[-3000:]}")
            results["shared stack"] = 1
        else:
            up = {**env, "SANLENS_TEST_STACK_UP": "1"}
            sides = [relay.start(name, [*pytest, "-m", "stack", *args], {**up, **_process(name)}) for name in SIDES]
            results.update({side: relay.wait(side) for side in sides})
        results[ALONE] = relay.wait(ALONE)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave the stacks running
        relay.stop()
        if starting.poll() is None:
            starting.kill()
        down = subprocess.run([str(config.ROOT / "sanlens"), "down", *([] if keep else ["--purge"])], env=env)
        results["shared stack down"] = down.returncode
        if any(alone.glob("*.pid")):  # the alone process was interrupted before its fixture stopped its stack
            subprocess.run([str(config.ROOT / "sanlens"), "down", *([] if keep else ["--purge"])], env=alone_env)
    _say(
        f"{time.monotonic() - began:.0f} s: "
        + ", ".join(f"{name} {'ok' if rc in (0, NO_TESTS) else f'FAILED (exit {rc})'}" for name, rc in results.items())
    )
    failed = [rc for rc in results.values() if rc not in (0, NO_TESTS)]
    return failed[0] if failed else 0


def start_empty_stack(**popen) -> subprocess.Popen:
    """`down --purge` (whatever a killed run left behind), then `up`, in the background: a test stack's start."""
    launcher = shlex.quote(str(config.ROOT / "sanlens"))
    script = f"{launcher} down --purge && exec {launcher} up"
    return subprocess.Popen(["bash", "-c", script], stderr=subprocess.STDOUT, cwd=config.ROOT, **popen)


class Relay:
    """pytest processes at once, each with a temp folder of its own (pytest empties its --basetemp at start), their
    lines printed as they come, prefixed with the process's name."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running: dict[str, tuple[subprocess.Popen, threading.Thread]] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> str:
        basetemp = Path(env["SANLENS_RUN"]).parent / f"{Path(env['SANLENS_RUN']).name}-pytest-{name.replace(' ', '-')}"
        first, end = PORT_SLICES[name]
        env = {**env, "SANLENS_FREE_PORTS": f"{first}-{end}"}
        proc = subprocess.Popen(
            [*argv, "--basetemp", str(basetemp)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",  # a byte that is not UTF-8 must not stop the copy (and block the process on its pipe)
            env=env,
            cwd=config.ROOT,
        )
        thread = threading.Thread(target=self._copy, args=(name, proc), daemon=True)
        thread.start()
        self.running[name] = (proc, thread)
        return name

    def wait(self, name: str) -> int:
        proc, thread = self.running[name]
        rc = proc.wait()
        thread.join()
        return rc

    def stop(self) -> None:
        """What still runs (the run was interrupted) is given time to end, then killed."""
        for proc, _ in self.running.values():  # after Ctrl-C, pytest ends its session: its fixtures stop their stacks
            try:
                proc.wait(timeout=180)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _copy(self, name: str, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            with self.lock:
                sys.stdout.write(f"[{name}] {line}")
                sys.stdout.flush()


def _process(name: str) -> dict[str, str]:
    return {"SANLENS_TEST_PROCESS": name}


def _say(text: str) -> None:
    print(f"==> {text}", file=sys.stderr, flush=True)

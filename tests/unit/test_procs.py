"""Stopping the stack's background processes (sanlensctl/procs.py): a component's processes stop side by side."""

from __future__ import annotations

import os
import sys

from sanlensctl import config, procs
from tests.support import wait_until

# on SIGTERM: note when, take a second to shut down (as a Flink job's mini-cluster does), note when it is done
SLOW_TO_STOP = """
import pathlib, signal, sys, time
log = pathlib.Path(sys.argv[1])
def term(*_):
    log.write_text(log.read_text() + f"term {time.monotonic()}\\n")
    time.sleep(1)
    log.write_text(log.read_text() + f"exit {time.monotonic()}\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
log.write_text("ready\\n")
time.sleep(60)
"""


def test_stop_all_signals_every_process_before_waiting_for_any(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "RUN", tmp_path)
    monkeypatch.setattr(config, "LOGS", tmp_path / "logs")
    names = [f"slow{i}" for i in range(3)]
    logs = {name: tmp_path / f"{name}.events" for name in names}
    pids = [procs.start(n, [sys.executable, "-c", SLOW_TO_STOP, str(logs[n])], dict(os.environ)) for n in names]
    wait_until(lambda: all(log.exists() for log in logs.values()), 30, "the processes ready")
    assert sorted(procs.stop_all([*names, "never-started"], timeout=10)) == names
    events = [line.split() for log in logs.values() for line in log.read_text().splitlines()[1:]]
    terms = [float(t) for kind, t in events if kind == "term"]
    exits = [float(t) for kind, t in events if kind == "exit"]
    assert len(terms) == len(exits) == 3 and max(terms) < min(exits)  # all signalled, then all waited for
    assert not any(procs.alive(pid) for pid in pids) and not any(procs.pid_file(n).exists() for n in names)

"""dbt on the project in dbt/, in its own virtualenv, with the local profile (`./sanlens dbt`, the demo's marts)."""

from __future__ import annotations

import fcntl
import os
import subprocess

from sanlensctl import config, install
from sanlensctl.errors import SanlensError


def run(*dbt_args: str, check: bool = True) -> int:
    exe = install.dbt_venv()
    project = config.ROOT / "dbt"
    argv = [str(exe), *dbt_args, "--project-dir", str(project), "--profiles-dir", str(project)]
    # The compiled project and dbt's log in the stack's run folder: dbt parses the project again in full (about 4-6
    # CPU-s more a build) whenever the profile it last parsed with changed, as it does between two stacks' ports, and
    # two stacks' builds would otherwise write one target/ at once.
    env = dict(
        config.tool_env(),
        DBT_TARGET=os.environ.get("DBT_TARGET", "local"),
        DBT_TARGET_PATH=str(config.RUN / "dbt" / "target"),
        DBT_LOG_PATH=str(config.RUN / "dbt" / "logs"),
    )
    # One dbt at a time on a stack: two builds of a model at once collide on its `__dbt_backup` table
    # (TABLE_ALREADY_EXISTS), as the demo and another test's build did on the tests' shared stack.
    config.RUN.mkdir(parents=True, exist_ok=True)
    with open(config.RUN / "dbt.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rc = subprocess.call(argv, env=env, cwd=project)
    if check and rc != 0:
        logs = env["DBT_LOG_PATH"]
        raise SanlensError(f"dbt {' '.join(dbt_args)} failed (exit {rc}): see the output above and {logs}")
    return rc

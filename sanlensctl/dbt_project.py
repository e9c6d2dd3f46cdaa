"""dbt on the project in dbt/, in its own virtualenv, with the local profile (`./sanlens dbt`, the demo's marts)."""

from __future__ import annotations

import os
import subprocess

from sanlensctl import config, install
from sanlensctl.errors import SanlensError


def run(*dbt_args: str, check: bool = True) -> int:
    exe = install.dbt_venv()
    project = config.ROOT / "dbt"
    argv = [str(exe), *dbt_args, "--project-dir", str(project), "--profiles-dir", str(project)]
    env = dict(config.tool_env(), DBT_TARGET=os.environ.get("DBT_TARGET", "local"))
    rc = subprocess.call(argv, env=env, cwd=project)
    if check and rc != 0:
        raise SanlensError(f"dbt {' '.join(dbt_args)} failed (exit {rc}): see the output above and dbt/logs/")
    return rc

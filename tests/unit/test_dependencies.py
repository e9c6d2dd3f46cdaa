"""Every third-party package the project's modules import is declared in requirements.txt: a module imports
nothing that only comes along with another package. The standard library and the project's own packages
(pyproject.toml's, and tests) are not declared."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from tests.support import ROOT


def canonical(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def declared_distributions() -> set[str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    requirements = (line.split("#", 1)[0].strip() for line in lines)
    return {canonical(re.split(r"[\s\[<>=!~;]", line, maxsplit=1)[0]) for line in requirements if line}


def local_packages() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {name.split(".")[0] for name in pyproject["tool"]["setuptools"]["packages"]} | {"tests"}


def project_modules() -> list[Path]:
    return sorted(
        path
        for path in ROOT.rglob("*.py")
        if not any(part.startswith(".") or part.endswith(".egg-info") for part in path.relative_to(ROOT).parts)
    )


def imported_top_levels(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def undeclared_imports(declared: set[str]) -> list[str]:
    """'module imports name (its distributions)' for each import of a distribution not in `declared`."""
    local, stdlib = local_packages(), set(sys.stdlib_module_names)
    providers = packages_distributions()  # import name -> the installed distributions that provide it
    undeclared = []
    for path in project_modules():
        for name in sorted(imported_top_levels(path) - local - stdlib):
            distributions = providers.get(name, [])
            if not declared & {canonical(d) for d in distributions}:
                provided_by = " or ".join(distributions) or "no installed distribution"
                undeclared.append(f"{path.relative_to(ROOT)} imports {name} ({provided_by})")
    return undeclared


def test_every_third_party_import_is_declared_in_requirements_txt():
    undeclared = undeclared_imports(declared_distributions())
    assert not undeclared, "imported but not in requirements.txt:\n" + "\n".join(undeclared)


def test_an_import_left_out_of_the_requirements_is_named_with_its_module():
    undeclared = undeclared_imports(declared_distributions() - {"numpy", "pyyaml"})
    assert "ingest/simulator/fleet.py imports numpy (numpy)" in undeclared
    assert "ingest/simulator/scenario.py imports yaml (PyYAML)" in undeclared
    assert not any(" imports os " in line or " imports ingest " in line for line in undeclared)

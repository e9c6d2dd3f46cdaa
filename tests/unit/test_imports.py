"""The project's modules import each other in one direction: no import circle (a function's import inside it counts
too), and the command line's package (sanlensctl) is imported by nothing but itself and the tests: the data path,
the queries, the dashboards and the SLO tooling run without it. Read from the source (AST), without a stack."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import ROOT

PACKAGE_DIRS = {"flink-jobs": "flink_jobs"}  # folders whose package has another name (pyproject.toml)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = PACKAGE_DIRS.get(parts[0], parts[0])
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_name(p): p
    for p in sorted(ROOT.rglob("*.py"))
    if not any(part.startswith(".") or part.endswith(".egg-info") for part in p.relative_to(ROOT).parts)
}


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each import in the module, anywhere in it; `from a import b` names a.b."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def project_module(name: str) -> str | None:
    """The project's module that importing `name` runs: the longest one `name` starts with."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


GRAPH = {
    module: {m for _, name in imported(path) if (m := project_module(name)) and m != module}
    for module, path in MODULES.items()
}


def circle() -> list[str] | None:
    """One import circle, as the modules along it back to the first, or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        for other in sorted(GRAPH[module]):
            if found := visit(other, [*path, module]):
                return found
        done.add(module)
        return None

    return next((found for module in sorted(GRAPH) if (found := visit(module, []))), None)


def test_the_graph_reads_the_project_s_modules():
    assert {"sanlensctl.cli", "queries.budget", "flink_jobs.common.runtime", "ingest.loader.loader"} <= set(GRAPH)
    assert "queries.budget" in GRAPH["sanlensctl.slos"]


def test_no_import_circle_among_the_project_s_modules():
    found = circle()
    assert found is None, "import circle: " + " -> ".join(found)


def test_nothing_outside_the_command_line_and_the_tests_imports_the_command_line():
    importing = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for module, path in MODULES.items()
        if module.split(".")[0] not in ("sanlensctl", "tests")
        for line, name in imported(path)
        if name.split(".")[0] == "sanlensctl"
    ]
    assert not importing, "imports sanlensctl:\n" + "\n".join(importing)


def test_no_test_imports_a_test_module_or_a_benchmark():
    """What the tests and the benchmarks share lives in modules of its own (tests/support.py and the like)."""
    importing = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for module, path in MODULES.items()
        if module.startswith("tests.") and not module.startswith("tests.benchmarks.")
        for line, name in imported(path)
        if (m := project_module(name))
        and (m.startswith("tests.benchmarks.") or m.rpartition(".")[2].startswith("test_"))
    ]
    assert not importing, "imports a test module or a benchmark:\n" + "\n".join(importing)

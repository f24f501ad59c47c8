"""The import architecture: the layering contracts and a module graph without import cycles.

The contracts live in pyproject.toml ([tool.importlinter]) and are checked by import-linter,
the same check as running ``lint-imports`` in the repository root:

- ``layers``: ontology <- kopl2sparql <- store <- synkqa <- parsers <- evaluation, each
  package importing only the ones below it (synkqa.cli, the typer CLI, sits on top of all);
- ``cli-on-top``: nothing but synkqa.cli (and the tests) imports synkqa.cli or typer;
- ``no-tests-in-library``: library code never imports ``tests``;
- ``no-sibling-cycles``: no import cycles between the modules of one package.

The second test builds the import graph of the six library packages with grimp and asserts
that it has no cycle at all (modules of different packages included). grimp reads every
import statement, so imports inside functions (lazy imports) count like top-level ones.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections import deque
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ontology", "kopl2sparql", "store", "synkqa", "parsers", "evaluation")

def test_import_contracts():
    """``lint-imports`` keeps every contract in pyproject.toml; on a broken one, its report."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               COLUMNS="120")
    run = subprocess.run(
        [sys.executable, "-c",
         "from importlinter.cli import lint_imports_command; lint_imports_command(prog_name='lint-imports')",
         "--config", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        pytest.fail(f"lint-imports exited with {run.returncode}:\n{run.stdout}\n{run.stderr}", pytrace=False)


def test_no_import_cycles():
    """The module import graph of the library packages is acyclic, lazy imports included."""
    for package in PACKAGES:          # grimp finds packages through sys.path: make sure it is this checkout
        origin = Path(importlib.util.find_spec(package).origin).resolve()
        assert origin.is_relative_to(ROOT), f"{package} resolves to {origin}, not to {ROOT}"
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    components = _strongly_connected_components(graph)
    if components:
        pytest.fail(f"{len(components)} import cycle(s):\n\n" + "\n\n".join(
            _describe_cycle(graph, component) for component in components), pytrace=False)


def _strongly_connected_components(graph) -> list[list[str]]:
    """The SCCs with more than one module (or a module importing itself), by Tarjan, iteratively."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in modules:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(edges[succ])))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in edges[node]:
                        components.append(sorted(component))
    return sorted(components)


def _describe_cycle(graph, component: list[str]) -> str:
    """The component's modules and one shortest cycle through its first module, with import lines."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:                      # breadth-first back to start, inside the component
        node = queue.popleft()
        succs = sorted(graph.find_modules_directly_imported_by(node) & members)
        if start in succs:
            path = [start]
            while node != start:
                path.append(node)
                node = previous[node]
            path = [start] + path[:0:-1] + [start] if len(path) > 1 else [start, start]
            break
        for succ in succs:
            if succ not in previous:
                previous[succ] = node
                queue.append(succ)
    lines = [f"cycle among {', '.join(component)}:"]
    for importer, imported in zip(path, path[1:]):
        for detail in graph.get_import_details(importer=importer, imported=imported):
            lines.append(f"  {importer}:{detail['line_number']} -> {imported}   "
                         f"({detail['line_contents'].strip()})")
    return "\n".join(lines)

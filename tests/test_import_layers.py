"""No import circles among sopgym's packages.

The graph is built from the source with ``ast``, at package granularity: a module belongs to
``sopgym.<first folder>`` (``sopgym.core``, ``sopgym.evaluation``, ``sopgym.orchestration``, ...;
the top-level folders ``agents/``, ``gateway/``, ``observability/``, ``services/`` and
``domains/`` are ``sopgym.agents`` ... as setup.py maps them), a top-level module of ``sopgym/``
is its own node (``sopgym.asgi``). An edge is an import executed when the module loads: the
module's top-level statements, including those under a top-level ``try`` or ``if``, but not
``if TYPE_CHECKING:`` (never executed) and not imports inside functions. Function-local imports
are the project's deliberate lazy loads (a heavy dependency, or a command reaching the layer that
serves it) and cannot make an import-time circle; counting them would call every command-line
module of a package (``evaluation/cli.py`` -> orchestration) a circle of the whole package.

A circle is an edge inside a strongly connected component of that graph. With the edges in
``KNOWN`` left out no circle may remain; an entry of ``KNOWN`` that no longer closes a circle
fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# folder -> the package it is installed as (setup.py's ROOTS; proto/ is generated code)
ROOTS = {
    "sopgym": "sopgym",
    "agents": "sopgym.agents",
    "gateway": "sopgym.gateway",
    "observability": "sopgym.observability",
    "services": "sopgym.services",
    "domains": "sopgym.domains",
}

# Package edges that still close a circle, each with why it is here and how it goes.
KNOWN: dict[tuple[str, str], str] = {}

Graph = dict[str, dict[str, set[str]]]  # package -> package -> "module -> module" examples


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    rest = parts[1:-1] if parts[-1] == "__init__" else parts[1:]
    return ".".join([ROOTS[parts[0]], *rest])


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def load_time_imports(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    """The modules ``tree`` imports when it loads (see the module docstring for what counts)."""
    found: list[str] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If):
            if not _is_type_checking(node):
                pending.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from sopgym import core` imports the package sopgym.core
            found.extend(f"{base}.{alias.name}" for alias in node.names)
    return found


def package_graph() -> Graph:
    graph: Graph = defaultdict(lambda: defaultdict(set))
    for folder in ROOTS:
        for path in sorted((REPO / folder).rglob("*.py")):
            module = module_name(path)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            source = package_of(module)
            for target in load_time_imports(tree, module, path.name == "__init__.py"):
                if not target.startswith("sopgym."):
                    continue
                destination = package_of(target)
                if destination != source:
                    graph[source][destination].add(f"{module} -> {target}")
    return graph


def circle_edges(graph: Graph) -> set[tuple[str, str]]:
    """Edges inside a strongly connected component (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    component: dict[str, int] = {}
    nodes = set(graph) | {d for targets in graph.values() for d in targets}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, {})))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component[member] = index[node]
                        if member == node:
                            break
    return {
        (source, destination)
        for source, targets in graph.items()
        for destination in targets
        if component[source] == component[destination]
    }


def test_no_new_import_circle_among_packages() -> None:
    graph = package_graph()
    assert {"sopgym.core", "sopgym.evaluation", "sopgym.orchestration"} <= set(graph)
    # with the known edges left out, no circle may remain
    pruned: Graph = {
        source: {d: why for d, why in targets.items() if (source, d) not in KNOWN}
        for source, targets in graph.items()
    }
    new = {
        f"{source} -> {destination}: {sorted(graph[source][destination])[:3]}"
        for source, destination in circle_edges(pruned)
    }
    assert not new, f"import circle(s) among sopgym packages: {sorted(new)}"
    stale = set(KNOWN) - circle_edges(graph)
    assert not stale, f"no longer a circle, remove from KNOWN: {sorted(stale)}"


def test_the_circles_this_test_was_written_for_stay_gone() -> None:
    graph = package_graph()
    for source, destination in [
        ("sopgym.core", "sopgym.evaluation"),  # Case/Score/Scorer live in core.scorer
        ("sopgym.core", "sopgym.importers"),  # the imported-name prefixes live in core.imported
        ("sopgym.observability", "sopgym.orchestration"),  # embedded stack: orchestration
        ("sopgym.agents", "sopgym.orchestration"),  # the step log line: observability.steps
        ("sopgym.client", "sopgym.gateway"),  # MCP wire names: core.wire
    ]:
        assert destination not in graph.get(source, {}), sorted(graph[source][destination])


def test_circle_edges_finds_a_circle_and_only_it() -> None:
    def edges(*pairs: str) -> Graph:
        graph: Graph = defaultdict(lambda: defaultdict(set))
        for pair in pairs:
            source, destination = pair.split(">")
            graph[source][destination].add(pair)
        return graph

    assert circle_edges(edges("a>b", "b>c", "c>a", "c>d", "d>e")) == {
        ("a", "b"), ("b", "c"), ("c", "a")
    }
    assert circle_edges(edges("a>b", "b>c", "a>c")) == set()


def test_load_time_imports_reads_what_runs_at_import() -> None:
    source = """
from __future__ import annotations
from typing import TYPE_CHECKING
import sopgym.core.tasks
from sopgym import evaluation
from . import sibling
try:
    from sopgym.gateway import app
except ImportError:
    from sopgym.services import fallback
if TYPE_CHECKING:
    from sopgym.orchestration import runner
def later():
    from sopgym.viewer import app
"""
    found = load_time_imports(ast.parse(source), "sopgym.client.over_x", is_package=False)
    assert "sopgym.core.tasks" in found and "sopgym.evaluation" in found
    assert "sopgym.client.sibling" in found
    assert {"sopgym.gateway.app", "sopgym.services.fallback"} <= set(found)
    assert not any(name.startswith(("sopgym.orchestration", "sopgym.viewer")) for name in found)

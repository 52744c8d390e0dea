"""Declared layers among sopgym's packages, and no import circle, counting every import.

The graph is built from the source with ``ast``, at package granularity: a module belongs to
``sopgym.<first folder>`` (``sopgym.core``, ``sopgym.evaluation``, ``sopgym.orchestration``, ...;
the top-level folders ``agents/``, ``gateway/``, ``observability/``, ``services/`` and
``domains/`` are ``sopgym.agents`` ... as setup.py maps them), a top-level module of ``sopgym/``
is its own node (``sopgym.asgi``). An edge is any import statement: at the top of a module,
under a ``try`` or an ``if``, and inside a function (a lazy load still ties the importer to
what it loads: when the function runs, both must be there, and a reach up from a lower layer
is the tangle the layers forbid). Only ``if TYPE_CHECKING:`` is left out: it never runs.

``LAYERS`` lists the packages from the bottom up; a package may import its own layer and the
layers below it. ``PENDING`` names the upward imports that remain, each with who removes it: an
entry that no longer reaches up fails too, so the table only shrinks. No circle may remain.
"""

from __future__ import annotations

import ast
import subprocess
import sys
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

# The packages from the bottom up (docs/house.md, "Declared layers"); a package imports its
# own layer and those below. Within a layer the packages do not import each other in a circle.
LAYERS: list[set[str]] = [
    # the shared core, and the small modules every process loads (the console, the ASGI
    # plumbing, the server loop, the generated gRPC code)
    {"sopgym.core", "sopgym.types", "sopgym.terminal", "sopgym.asgi", "sopgym.serving",
     "sopgym.health", "sopgym.proto"},
    {"sopgym.runs"},  # the run folder's records and its writer
    {"sopgym.observability"},
    {"sopgym.gateway", "sopgym.client", "sopgym.evaluation"},
    {"sopgym.agents", "sopgym.domains"},
    {"sopgym.generation", "sopgym.services"},
    {"sopgym.importers"},
    {"sopgym.orchestration"},
    # what a user starts: the command line, the environment server, the viewer, Inspect's
    # bridge, and the package's own lazy API (sopgym.run, sopgym.score, sopgym.evaluate)
    {"sopgym.cli", "sopgym.env", "sopgym.viewer", "sopgym.interop", "sopgym", "sopgym.__main__"},
]  # fmt: skip
LAYER_OF = {package: level for level, packages in enumerate(LAYERS) for package in packages}

# Upward imports that remain, each with why and who removes it.
PENDING: dict[tuple[str, str], str] = {}

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


def imports_in(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    """Every module ``tree`` imports, wherever the statement stands, except under
    ``if TYPE_CHECKING:`` (its ``else`` counts)."""
    found: list[str] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from sopgym import core` imports the package sopgym.core
            found.extend(f"{base}.{alias.name}" for alias in node.names)
        else:
            pending.extend(ast.iter_child_nodes(node))
    return found


def add_module(graph: Graph, module: str, tree: ast.Module, is_package: bool) -> None:
    """The package edges of one module's imports, each with its "module -> target" example."""
    source = package_of(module)
    for target in imports_in(tree, module, is_package):
        if not target.startswith("sopgym."):
            continue
        destination = package_of(target)
        if destination != source:
            graph[source][destination].add(f"{module} -> {target}")


def package_graph() -> Graph:
    graph: Graph = defaultdict(lambda: defaultdict(set))
    for folder in ROOTS:
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            add_module(graph, module_name(path), tree, path.name == "__init__.py")
    return graph


def upward_edges(graph: Graph) -> dict[tuple[str, str], list[str]]:
    """Each import from a package to one in a higher layer, with its examples; a package no
    layer names is reported as reaching up from nowhere (it must be placed first)."""
    found: dict[tuple[str, str], list[str]] = {}
    for source, targets in graph.items():
        for destination, examples in targets.items():
            if source not in LAYER_OF or destination not in LAYER_OF:
                found[source, destination] = ["(a package no layer names)"]
            elif LAYER_OF[destination] > LAYER_OF[source]:
                found[source, destination] = sorted(examples)[:3]
    return found


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


def test_every_package_imports_only_its_layer_and_below() -> None:
    graph = package_graph()
    assert {"sopgym.core", "sopgym.runs", "sopgym.evaluation", "sopgym.orchestration"} <= set(graph)
    upward = upward_edges(graph)
    new = {f"{s} -> {d}: {why}" for (s, d), why in upward.items() if (s, d) not in PENDING}
    assert not new, f"import(s) reaching a higher layer: {sorted(new)}"
    gone = set(PENDING) - set(upward)
    assert not gone, f"no longer reaching up, remove from PENDING: {sorted(gone)}"


def test_no_import_circle_among_packages_counting_function_local_imports() -> None:
    graph = package_graph()
    pruned: Graph = {
        source: {d: why for d, why in targets.items() if (source, d) not in PENDING}
        for source, targets in graph.items()
    }
    circles = {
        f"{source} -> {destination}: {sorted(graph[source][destination])[:3]}"
        for source, destination in circle_edges(pruned)
    }
    assert not circles, f"import circle(s) among sopgym packages: {sorted(circles)}"


def test_the_reaches_this_test_was_written_for_stay_gone() -> None:
    graph = package_graph()
    for source, destination in [
        ("sopgym.core", "sopgym.evaluation"),  # Case/Score/Scorer live in core.scorer
        ("sopgym.observability", "sopgym.orchestration"),  # embedded stack: orchestration
        ("sopgym.agents", "sopgym.orchestration"),  # the step log line: observability.steps
        ("sopgym.client", "sopgym.gateway"),  # MCP wire names: core.wire
        ("sopgym.client", "sopgym.orchestration"),  # the recorder: orchestration.recorder
        ("sopgym.evaluation", "sopgym.orchestration"),  # sopgym score: orchestration.score
        ("sopgym.runs", "sopgym.orchestration"),  # RunConfig.validate(): orchestration.api
        ("sopgym.observability", "sopgym.evaluation"),  # normalize: core.normalized
        ("sopgym.gateway", "sopgym.orchestration"),  # ADMIN_TOKEN_ENV: core.access
        ("sopgym.services", "sopgym.orchestration"),  # check_model_spec: services.model
        ("sopgym.terminal", "sopgym.evaluation"),  # the run summary: cli.summary
        ("sopgym.evaluation", "sopgym.importers"),  # the import index: core.import_index
        ("sopgym.agents", "sopgym.importers"),  # the baseline agent: agents.baseline
    ]:
        assert destination not in graph.get(source, {}), sorted(graph[source][destination])


def test_a_planted_upward_import_fails_both_checks() -> None:
    """A function-local import up from core into orchestration, planted in the real graph:
    the layer check names it, and with orchestration importing core it closes a circle."""
    graph = package_graph()
    planted = "def later():\n    from sopgym.orchestration.runner import Runner\n"
    add_module(graph, "sopgym.core.planted", ast.parse(planted), is_package=False)
    assert ("sopgym.core", "sopgym.orchestration") in upward_edges(graph)
    assert ("sopgym.core", "sopgym.orchestration") in circle_edges(graph)


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


def test_imports_in_counts_every_import_but_type_checking() -> None:
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
else:
    from sopgym.runs import records
def later():
    from sopgym.viewer import app
class Lazy:
    def method(self):
        import sopgym.interop.inspect_log
"""
    found = imports_in(ast.parse(source), "sopgym.client.over_x", is_package=False)
    assert "sopgym.core.tasks" in found and "sopgym.evaluation" in found
    assert "sopgym.client.sibling" in found
    assert {"sopgym.gateway.app", "sopgym.services.fallback"} <= set(found)
    assert {"sopgym.viewer.app", "sopgym.interop.inspect_log", "sopgym.runs.records"} <= set(found)
    assert not any(name.startswith("sopgym.orchestration") for name in found)


def test_the_agent_worker_reads_its_jobs_without_loading_evaluation(tmp_path: Path) -> None:
    """The worker's stdin and stdout lines are the run folder's records (sopgym.runs): loading
    the worker loads neither the scoring nor the runner (it used to load evaluation)."""
    script = (
        "import sys, sopgym.agents.worker\n"
        "print(sorted(m for m in sys.modules if m.startswith(('sopgym.evaluation', "
        "'sopgym.orchestration'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout

"""The dependency rule as code: B depends on A when B takes a field that A returns."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task


def dependency_edges(apis: list[dict]) -> list[list[str]]:
    """``[producer, consumer]`` pairs, sorted; an API never depends on itself."""
    edges = {
        (a["name"], b["name"])
        for a in apis
        for b in apis
        if a["name"] != b["name"] and set(a["outputs"]) & set(b["inputs"])
    }
    return [list(edge) for edge in sorted(edges)]


def solve(task: Task, run: PolicyRun) -> Solution:
    apis = task.inputs["apis"]
    edges = dependency_edges(apis)
    nodes = [api["name"] for api in apis]
    roots = sorted(set(nodes) - {to for _, to in edges})
    return Solution({"nodes": nodes, "edges": edges}, {"roots": roots})

"""Dependency graphs over API signatures: the rule both the reference policy and the scripted
model apply to the signatures a stage-1 question shows (each from what it has: the generator's
task, or the question read out of the prompt).

API B depends on API A when B takes a field A returns. A question may name a
``workflow_key`` (TELLER's setting, the whole ~280-signature catalog): then the graph holds
only the workflow, the APIs that take that key and every API linked to them by dependencies,
in either direction; the rest of the catalog is left out (the paper's graph holds only the
scenario's APIs, paper §4.1).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Signature = tuple[str, frozenset[str] | tuple[str, ...], frozenset[str] | tuple[str, ...]]
"""``(name, inputs, outputs)``."""


def dependency_edges(signatures: Sequence[Signature]) -> list[tuple[str, str]]:
    """``(producer, consumer)`` for every pair where the consumer takes a field the producer
    returns, sorted."""
    return sorted(
        {
            (a, b)
            for a, _, a_out in signatures
            for b, b_in, _ in signatures
            if a != b and set(a_out) & set(b_in)
        }
    )


def linked_to(edges: Iterable[tuple[str, str]], starts: Iterable[str]) -> set[str]:
    """The nodes reachable from ``starts`` over ``edges`` taken in either direction (the
    weakly connected part of the graph that holds them), ``starts`` included."""
    neighbours: dict[str, set[str]] = {}
    for a, b in edges:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    found: set[str] = set()
    stack = list(starts)
    while stack:
        node = stack.pop()
        if node not in found:
            found.add(node)
            stack += neighbours.get(node, ())
    return found


def workflow_graph(
    signatures: Sequence[Signature], workflow_key: str | None = None
) -> tuple[list[str], list[tuple[str, str]]]:
    """The graph's nodes (in the order given) and sorted edges; with ``workflow_key``, only
    the APIs taking it and those linked to them."""
    edges = dependency_edges(signatures)
    if workflow_key is None:
        return [name for name, _, _ in signatures], edges
    kept = linked_to(edges, [name for name, inputs, _ in signatures if workflow_key in inputs])
    nodes = [name for name, _, _ in signatures if name in kept]
    return nodes, [(a, b) for a, b in edges if a in kept and b in kept]

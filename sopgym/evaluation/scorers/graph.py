"""Scoring a reconstructed dependency graph, ``{"nodes": [...], "edges": [[from, to], ...]}``.

Edges are directed: ``[a, b]`` and ``[b, a]`` are different edges, so nothing here goes
through :func:`.fields.normalize` (which sorts nested lists). Node names compare after
trimming and case folding, as a person would read them.
"""

from __future__ import annotations

from typing import Any

from sopgym.evaluation.scorers.base import Case, Score, Scorer, f1, listed, ratio
from sopgym.types import JSON

Edge = tuple[str, str]


def _name(value: Any) -> str:
    return " ".join(str(value).split()).casefold()


def graph_parts(value: Any) -> tuple[set[str], set[Edge]] | None:
    """The node set and directed edge set of a graph answer; ``None`` when it is not one."""
    if not isinstance(value, dict):
        return None
    nodes, edges = value.get("nodes"), value.get("edges")
    if not isinstance(nodes, list) or not isinstance(edges, list):
        return None
    if not all(isinstance(e, (list, tuple)) and len(e) == 2 for e in edges):
        return None
    return {_name(n) for n in nodes}, {(_name(a), _name(b)) for a, b in edges}


def reachable(edges: set[Edge]) -> set[Edge]:
    """Every ordered pair (a, b) with a directed path from a to b: the graph's paths."""
    successors: dict[str, set[str]] = {}
    for a, b in edges:
        successors.setdefault(a, set()).add(b)
    pairs: set[Edge] = set()
    for start in successors:
        stack, seen = list(successors[start]), set()
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack += successors.get(node, ())
        pairs |= {(start, node) for node in seen}
    return pairs


def _prf(predicted: set[Any], gold: set[Any]) -> tuple[float, float, float]:
    hits = len(predicted & gold)
    precision = hits / len(predicted) if predicted else float(not gold)
    recall = ratio(hits, len(gold))
    return precision, recall, f1(precision, recall)


def _overlap(a: set[Any], b: set[Any]) -> float:
    """Jaccard overlap (1.0 for two empty sets)."""
    return ratio(len(a & b), len(a | b))


def compare_graphs(predicted: tuple[set[str], set[Edge]], gold: tuple[set[str], set[Edge]]) -> JSON:
    """Node and edge precision / recall / F1, and node, edge and path (reachability) overlap."""
    metrics: JSON = {}
    for part, p, g in (("node", predicted[0], gold[0]), ("edge", predicted[1], gold[1])):
        precision, recall, score = _prf(p, g)
        metrics |= {f"{part}_precision": precision, f"{part}_recall": recall, f"{part}_f1": score}
        metrics[f"{part}_overlap"] = _overlap(p, g)
    metrics["path_overlap"] = _overlap(reachable(predicted[1]), reachable(gold[1]))
    return metrics


def graph(field: str | None = None, gates: bool = True) -> Scorer:
    """The answer's graph against the gold graph: the value is the mean of node F1 and edge
    F1 (1.0 only for the exact graph). ``field`` names the output field holding the graph;
    ``None``: the answer itself is the graph."""

    def measure(case: Case) -> Score:
        gold = graph_parts(case.gold.outputs if field is None else case.gold.outputs.get(field))
        if gold is None:
            return Score(None, {}, "no gold graph")
        answer = case.answer if field is None else case.answer.get(field)
        predicted = graph_parts(answer)
        if predicted is None:
            return Score(0.0, {}, "no graph in the answer (nodes and [from, to] edges)")
        metrics = compare_graphs(predicted, gold)
        missing = sorted(f"{a}->{b}" for a, b in gold[1] - predicted[1])
        extra = sorted(f"{a}->{b}" for a, b in predicted[1] - gold[1])
        explanation = (
            "; ".join(
                part
                for part in (
                    f"missing edges: {listed(missing)}" if missing else "",
                    f"extra edges: {listed(extra)}" if extra else "",
                    "nodes differ" if predicted[0] != gold[0] else "",
                )
                if part
            )
            or "exact graph"
        )
        value = (metrics["node_f1"] + metrics["edge_f1"]) / 2
        return Score(value, metrics, explanation)

    return Scorer("graph", measure, gates)

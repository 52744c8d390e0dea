"""How the scripted model answers one-shot dependency-graph questions: by reading the API
signatures in the conversation, never from a stored answer.

An object in a user turn that lists ``apis``, each with a ``name`` and the names of its
``inputs`` and ``outputs``, is a graph question. API B depends on API A when B takes a field
named like one A returns; the answer lists every API as a node and every such dependency as a
directed edge ``[A, B]``. Change the signatures in the prompt and the answer changes with them.
A question that names a ``workflow_key`` (the whole catalog, TELLER's stage 1) is answered with
the workflow alone: the APIs that take that key and those linked to them.

An error profile perturbs the worked-out graph, edge by edge, with three of its step kinds
read as graph mistakes (:data:`GRAPH_MISTAKES`): ``skip_step`` drops a true edge (edge recall
falls), ``wrong_tool`` reverses one (both fall), ``hallucinated_tool`` adds an edge between two
APIs that have none (edge precision falls). ``wrong_node`` selects a wrong API in place of a
true one (named like it, never shown), its edges with it: node precision and recall fall, as
they do when a model picks the wrong APIs out of a large catalog. Draws are seeded by the
profile and the question, and every mistake is returned for the injection log.
``messy_format`` varies the writing.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from sopgym.core.depgraph import workflow_graph
from sopgym.services.model.conversation import Conversation
from sopgym.services.model.profiles import ErrorProfile
from sopgym.types import JSON


@dataclass(frozen=True)
class Signature:
    name: str
    inputs: frozenset[str]
    outputs: frozenset[str]


def graph_question(convo: Conversation) -> tuple[JSON, list[Signature]] | None:
    """The first object in the user turns that describes APIs, with its signatures."""
    for text in convo.user_texts:
        for value in convo.reader.objects(text):
            signatures = read_signatures(value.get("apis"))
            if signatures:
                return value, signatures
    return None


def read_signatures(apis: Any) -> list[Signature] | None:
    """``apis`` as signatures, or ``None`` when it is not a list of named signatures (fields
    given as names, or as objects with a ``name``)."""
    if not isinstance(apis, list) or not apis:
        return None
    signatures = []
    for api in apis:
        if not isinstance(api, dict) or not isinstance(api.get("name"), str):
            return None
        inputs, outputs = _names(api.get("inputs")), _names(api.get("outputs"))
        if inputs is None or outputs is None:
            return None
        signatures.append(Signature(api["name"], frozenset(inputs), frozenset(outputs)))
    return signatures


def dependency_graph(signatures: list[Signature], workflow_key: str | None = None) -> JSON:
    """Every API as a node (in the order given) and ``[producer, consumer]`` edges, sorted;
    when the question names a ``workflow_key`` (the whole catalog shown), only the APIs that
    take it and those linked to them (:func:`sopgym.core.depgraph.workflow_graph`)."""
    nodes, edges = workflow_graph([(s.name, s.inputs, s.outputs) for s in signatures],
                                  workflow_key)  # fmt: skip
    return {"nodes": nodes, "edges": [list(e) for e in edges]}


GRAPH_MISTAKES: Final = {
    "skip_step": "graph_dropped_edge",
    "wrong_tool": "graph_reversed_edge",
    "hallucinated_tool": "graph_invented_edge",
}


def perturbed_graph(graph: JSON, profile: ErrorProfile, key: str) -> tuple[JSON, list[JSON]]:
    """``graph`` with the profile's mistakes, and one log record per mistake."""
    if profile.perfect:
        return graph, []
    edges = [tuple(edge) for edge in graph["edges"]]
    kept: list[tuple[str, ...]] = []
    mistakes: list[JSON] = []
    for edge in edges:
        if _draw(profile, key, edge, "skip_step"):
            mistakes.append({"kind": GRAPH_MISTAKES["skip_step"], "expected": list(edge)})
        elif _draw(profile, key, edge, "wrong_tool") and edge[::-1] not in edges:
            kept.append(edge[::-1])
            mistakes.append({"kind": GRAPH_MISTAKES["wrong_tool"], "expected": list(edge),
                             "got": list(edge[::-1])})  # fmt: skip
        else:
            kept.append(edge)
    nodes, kept = _wrong_nodes(graph["nodes"], kept, profile, key, mistakes)
    for a, b in itertools.pairwise(nodes):  # candidates: neighbours in the listing
        unrelated = (a, b) not in edges and (b, a) not in edges and (a, b) not in kept
        if unrelated and _draw(profile, key, (a, b), "hallucinated_tool"):
            kept.append((a, b))
            mistakes.append({"kind": GRAPH_MISTAKES["hallucinated_tool"], "got": [a, b]})
    return {"nodes": nodes, "edges": [list(e) for e in sorted(kept)]}, mistakes


def _wrong_nodes(
    nodes: list[str],
    edges: list[tuple[str, ...]],
    profile: ErrorProfile,
    key: str,
    mistakes: list[JSON],
) -> tuple[list[str], list[tuple[str, ...]]]:
    """``nodes`` with each drawn one replaced by a wrong API, renamed in ``edges`` too."""
    wrong = {name: f"{name}_legacy" for name in nodes if _draw(profile, key, (name,), "wrong_node")}
    if not wrong:
        return nodes, edges
    mistakes += [{"kind": "graph_wrong_node", "expected": n, "got": w} for n, w in wrong.items()]
    renamed = [tuple(wrong.get(end, end) for end in edge) for edge in edges]
    return [wrong.get(name, name) for name in nodes], renamed


def _draw(profile: ErrorProfile, key: str, edge: tuple[str, ...], kind: str) -> bool:
    rate = profile.rate(kind)
    if rate <= 0:
        return False
    text = f"{profile.seed}|{key}|{kind}|{'>'.join(edge)}"
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < rate


def _names(fields: Any) -> list[str] | None:
    if not isinstance(fields, list):
        return None
    names = list(_field_names(fields))
    return names if len(names) == len(fields) else None


def _field_names(fields: list[Any]) -> Iterator[str]:
    for item in fields:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            yield item["name"]

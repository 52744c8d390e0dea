"""How the scripted model answers one-shot dependency-graph questions: by reading the API
signatures in the conversation, never from a stored answer.

An object in a user turn that lists ``apis``, each with a ``name`` and the names of its
``inputs`` and ``outputs``, is a graph question. API B depends on API A when B takes a field
named like one A returns; the answer lists every API as a node and every such dependency as a
directed edge ``[A, B]``. Change the signatures in the prompt and the answer changes with them.
Error profiles do not apply to these answers (only ``messy_format`` varies how they are
written): there is no stored script to perturb.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sopgym.services.model.conversation import Conversation
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


def dependency_graph(signatures: list[Signature]) -> JSON:
    """Every API as a node (in the order given) and ``[producer, consumer]`` edges, sorted."""
    edges = sorted(
        {
            (a.name, b.name)
            for a in signatures
            for b in signatures
            if a.name != b.name and a.outputs & b.inputs
        }
    )
    return {"nodes": [s.name for s in signatures], "edges": [list(e) for e in edges]}


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

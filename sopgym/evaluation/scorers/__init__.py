"""Composable scorers: each built-in is a factory returning a :class:`Scorer`; a domain pack
names the ones it wants (``DomainPack.scorers``), or gets its task kind's defaults.

Scorers are one kind of the plug-in registry (:mod:`sopgym.core.plugins`): besides a
:class:`Scorer`, a pack's list may hold a name (ours, registered here by factory name, or an
installed package's under the entry-point group ``sopgym.scorers``) or ``module:attr`` (a
scorer, or a factory called with no arguments).

See docs/domain-pack.md, "Scoring".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from sopgym.core.exceptions import UsageError
from sopgym.core.plugins import NotAPlugin, Plugins
from sopgym.core.tasks import TASK_KINDS, Task
from sopgym.evaluation.scorers.answers import answer_schema, final_state, schema_valid
from sopgym.evaluation.scorers.base import Case, Score, Scorer
from sopgym.evaluation.scorers.calls import errors, order, tool_calls
from sopgym.evaluation.scorers.fields import output_fields
from sopgym.evaluation.scorers.graph import graph

if TYPE_CHECKING:
    from sopgym.core.domain import DomainPack

__all__ = [
    "SCORER_PLUGINS",
    "Case",
    "Score",
    "Scorer",
    "UnknownScorer",
    "answer_schema",
    "default_scorers",
    "errors",
    "final_state",
    "graph",
    "order",
    "output_fields",
    "schema_valid",
    "scorers_for",
    "tool_calls",
]


def default_scorers(kind: str) -> list[Scorer]:
    """The scorers a task of ``kind`` gets when its pack names none.

    Every kind gets the call scorers (an answer-only task should make no calls: any call shows
    there). Agentic kinds gate on the answer's fields and, in stateful domains, the final
    state; the answer's schema validity is reported but gates only the answer-only kinds,
    where a well-formed answer is part of the task. Graph answers are compared as directed
    graphs, never field by field (that would sort the edges and lose their direction).
    """
    calls = [tool_calls(), errors(), order()]
    if kind in ("tool_use", "dialogue"):
        return [output_fields(), final_state(), schema_valid(), *calls]
    if kind == "json_answer":
        return [output_fields(), schema_valid(gates=True), answer_schema(), *calls]
    if kind == "graph":
        return [graph(), schema_valid(gates=True), *calls]
    raise ValueError(f"unknown task kind {kind!r} (one of {', '.join(TASK_KINDS)})")


class UnknownScorer(UsageError, ValueError):
    """A scorer name in a pack's ``scorers`` that names no scorer."""


def _scorer(spec: str, loaded: Any) -> Scorer:
    """A scorer of a loaded object: a :class:`Scorer`, or a factory making one with no
    arguments (its defaults)."""
    made = loaded() if callable(loaded) and not isinstance(loaded, Scorer) else loaded
    if not isinstance(made, Scorer):
        raise NotAPlugin("not a Scorer nor a factory returning one")
    return made


SCORER_PLUGINS: Plugins[Scorer] = Plugins("scorer", "sopgym.scorers", _scorer, UnknownScorer)
_OURS: list[Callable[..., Scorer]] = [
    answer_schema, errors, final_state, graph, order, output_fields, schema_valid, tool_calls,
]
for _factory in _OURS:
    SCORER_PLUGINS.register(_factory.__name__, _factory)


# the defaults of each task kind, built once: scorers are immutable, and asked for per episode
_DEFAULTS: dict[str, list[Scorer]] = {}


@cache
def _named_scorer(spec: str) -> Scorer:
    """The scorer a pack names (made once: scorers are immutable, and asked for per episode)."""
    return SCORER_PLUGINS.resolve(spec)


def scorers_for(domain: DomainPack, task: Task) -> list[Scorer]:
    """The pack's own scorers (a name or ``module:attr`` in its list resolved), else the
    defaults of the task's kind; names must be unique (they key the task's ``scores``)."""
    if domain.scorers is None:
        defaults = _DEFAULTS.get(task.kind)
        if defaults is None:
            defaults = _DEFAULTS[task.kind] = default_scorers(task.kind)
        return defaults
    chosen = [_named_scorer(s) if isinstance(s, str) else s for s in domain.scorers]
    names = [s.name for s in chosen]
    if len(set(names)) != len(names):
        raise ValueError(f"domain {domain.name}: scorer names repeat: {names}")
    return chosen

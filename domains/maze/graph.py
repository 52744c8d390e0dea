"""An SOP as a graph of steps (data), the walk that finds the step a conversation has reached,
and the SOP text rendered from the graph in each variant the runs can choose.

A step may ask the customer (or the back office) for one fact; its edges are tried in order and
the first whose condition holds is taken. The walk from the first step stops at the step to do
next: one whose fact is not known yet, a step with no way on (an outcome), or a step the walk
already passed (the SOP loops back to it: it is done again).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


@dataclass(frozen=True)
class Condition:
    """``fact op value`` on the fact's latest value, or on how often it took ``count``."""

    fact: str
    op: str
    value: Any
    count: str | None = None

    def holds(self, facts: dict[str, list[Any]]) -> bool:
        history = facts.get(self.fact, [])
        if self.count is not None:
            return _OPS[self.op](history.count(self.count), self.value)
        return bool(history) and _OPS[self.op](history[-1], self.value)

    def text(self, labels: dict[str, str]) -> str:
        name = labels.get(self.fact, self.fact)
        if self.count is not None:
            return f"{name} has been '{self.count}' {self.op} {self.value} time(s)"
        return f"{name} {self.op} {self.value}"


@dataclass(frozen=True)
class Edge:
    to: str
    when: tuple[Condition, ...] = ()  # all must hold; empty: otherwise


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    script: str  # what the agent says at this step (the SOP's suggested script)
    asks: str | None = None  # the fact this step obtains
    edges: tuple[Edge, ...] = ()


@dataclass
class Graph:
    name: str
    title: str
    shape: str  # "LRS" (wide, shallow) or "HRS" (deep)
    objective: str
    steps: list[Step]
    labels: dict[str, str] = field(default_factory=dict)  # fact -> how the SOP names it

    def __post_init__(self) -> None:
        self.by_id = {s.id: s for s in self.steps}
        dangling = {e.to for s in self.steps for e in s.edges} - set(self.by_id)
        if dangling or len(self.by_id) != len(self.steps):
            raise ValueError(f"scenario {self.name}: bad step ids {sorted(dangling)}")

    @property
    def root(self) -> Step:
        return self.steps[0]


@dataclass
class Walk:
    step: str  # the step to do next
    path: list[str]  # the steps passed, the last one included
    used: set[str]  # facts whose conditions were tried on the way
    looped: bool  # the walk ended on a step it had passed (a loop back)


def walk(graph: Graph, facts: dict[str, list[Any]]) -> Walk:
    step, path, used = graph.root, [graph.root.id], set[str]()
    while True:
        if step.asks is not None and not facts.get(step.asks):
            return Walk(step.id, path, used, False)
        edge = None
        for candidate in step.edges:
            if _tried(candidate, facts, used):
                edge = candidate
                break
        if edge is None:
            return Walk(step.id, path, used, False)
        if edge.to in path:
            return Walk(edge.to, [*path, edge.to], used, True)
        step = graph.by_id[edge.to]
        path.append(step.id)


def _tried(edge: Edge, facts: dict[str, list[Any]], used: set[str]) -> bool:
    """Whether ``edge`` is taken; the facts of the conditions tried (in order, up to the
    first that fails) are added to ``used``."""
    for condition in edge.when:
        used.add(condition.fact)
        if not condition.holds(facts):
            return False
    return True


# ---- the SOP text ----
SOP_VARIANTS = ("clean", "noisy", "deciding", "none")
_NOISE = (
    "Note: our quality team reviews a sample of conversations every week; this does not "
    "change any step below.",
    "Reminder: keep a friendly tone and use the customer's name when you know it.",
    "Housekeeping: the old knowledge-base links in this section moved to the new portal.",
)


def render(graph: Graph, variant: str) -> str:
    """The SOP text: ``clean`` (steps, rules and scripts), ``noisy`` (the same with remarks
    that change no step), ``deciding`` (the branching rules only, no scripts: the §7 ablation
    "SOP reduced to the deciding part") and ``none`` (no procedure: the no-SOP ablation)."""
    if variant == "none":
        return (
            f"# {graph.title}\n\nNo procedure is provided for this run. Decide the next step "
            "(field `step`) and what to say (field `reply`) from the conversation alone.\n"
        )
    scripts = variant != "deciding"
    lines = [f"# {graph.title}", "", f"Objective: {graph.objective}", ""]
    if scripts:
        lines += [
            "Answer with the number of the step you take next (field `step`) and what you say "
            "to the customer (field `reply`). Facts come from the customer's words and from "
            "the back-office notes marked [system].",
            "",
        ]
    for index, step in enumerate(graph.steps):
        lines.append(f"## Step {step.id}: {step.title}")
        if step.asks is not None:
            lines.append(f"Obtain: {graph.labels.get(step.asks, step.asks)}.")
        for edge in step.edges:
            if edge.when:
                rule = " and ".join(c.text(graph.labels) for c in edge.when)
                lines.append(f"- If {rule}: go to step {edge.to}.")
            else:
                lines.append(f"- Otherwise: go to step {edge.to}.")
        if not step.edges:
            lines.append("- This step ends the procedure.")
        if scripts:
            lines.append(f'Suggested script: "{step.script}"')
        if variant == "noisy":
            lines.append(_NOISE[index % len(_NOISE)])
        lines.append("")
    return "\n".join(lines)

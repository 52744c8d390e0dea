"""One scenario as a domain pack: the customer walks the SOP graph to produce conversations,
each cut just before an agent turn is a subtask, and the reference policy reads the cut
conversation back (:func:`.speech.read`) and walks the graph to the step to take next.

The gold's ``decisions`` carry what the agent must not see: the scenario's shape (LRS/HRS),
the path walked and the difficulty sources of the subtask (conversation, calculation, route),
which the report breaks scores down by.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import orjson

from sopgym.core.domain import DomainPack, GeneratedData, Generator, Policy, PolicyRun
from sopgym.core.tasks import Solution, Task
from sopgym.domains.maze.graph import SOP_VARIANTS, render, walk
from sopgym.domains.maze.scenarios import SCENARIOS
from sopgym.domains.maze.shapes import Customer, Scenario
from sopgym.domains.maze.speech import (
    CALCULATED,
    CHATTER,
    CLAIMS,
    REVERSALS,
    SESSION,
    WAITED,
    Choice,
    DaysAgo,
    Note,
    clock,
    noisy,
    read,
    simplify,
)
from sopgym.types import JSON

FAMILY = "maze"
ABLATION_FAMILY = "maze_ablation"  # the same subtasks with simplified queries (paper §7)
MAX_TURNS = 40  # agent turns per conversation; the SOPs end far sooner
WIDE = 10  # a step with more children than this is a wide choice (a "route" source)


def output_schema(scenario: Scenario) -> JSON:
    return {
        "type": "object",
        "properties": {
            "step": {
                "enum": [s.id for s in scenario.graph.steps],
                "description": "the number of the SOP step to take next",
            },
            "reply": {
                "type": "string",
                "x-free-text": True,
                "description": "what to say to the customer now (free text, not compared)",
            },
        },
        "required": ["step", "reply"],
        "additionalProperties": False,
    }


INPUT_SCHEMA: JSON = {
    "type": "object",
    "properties": {
        "objective": {"type": "string", "minLength": 1},
        "dialogue": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "role": {"enum": ["customer", "agent", "system"]},
                    "time": {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}:[0-9]{2}$"},
                    "text": {"type": "string"},
                },
                "required": ["role", "time", "text"],
                "additionalProperties": False,
            },
        },
        "output_requirement": {"type": "string", "minLength": 1},
    },
    "required": ["objective", "dialogue", "output_requirement"],
    "additionalProperties": False,
}


def requirement(schema: JSON) -> str:
    return (
        "Decide the SOP step the agent takes next in this conversation and what the agent "
        "says. Answer with one JSON object valid against this JSON Schema:\n"
        + orjson.dumps(schema, option=orjson.OPT_INDENT_2).decode()
    )


def converse(scenario: Scenario, customer: Customer, rng: random.Random) -> list[list[JSON]]:
    """The conversation of one customer with an agent who follows the SOP, returned as its
    cuts: the dialogue before each agent turn."""
    graph = scenario.graph
    today = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randrange(365))
    now = rng.randint(8 * 3600, 17 * 3600)
    dialogue: list[JSON] = [
        {"role": "system", "time": clock(now), "text": SESSION.format(date=today.isoformat())},
        {"role": "customer", "time": clock(now), "text": rng.choice(CHATTER)},
    ]
    now += customer.waited_s
    told: dict[str, list[object]] = {WAITED: [customer.waited_s / 60]}
    reversal = customer.reversal
    cuts = []

    def say(role: str, text: str) -> None:
        nonlocal now
        if role == "customer":
            text = noisy(text, rng, rng.random() < customer.filler, rng.random() < customer.menu)
        dialogue.append({"role": role, "time": clock(now), "text": text})
        now += rng.randint(5, 90)

    for _ in range(MAX_TURNS):
        step = graph.by_id[walk(graph, told).step]
        cuts.append(list(dialogue))
        say("agent", step.script)
        if reversal is not None and told.get(reversal[0]):
            fact = scenario.fact(reversal[0])
            assert isinstance(fact, Choice)
            say("customer", rng.choice(REVERSALS) + fact.say(reversal[1], rng, False))
            told[reversal[0]].append(reversal[1])
            reversal = None
            continue
        if step.asks is None:
            return cuts
        fact = scenario.fact(step.asks)
        queue = customer.values[fact.name]
        value = queue[min(len(told.get(fact.name, [])), len(queue) - 1)]  # asked again: the next
        if isinstance(fact, Choice):
            say("customer", fact.say(str(value), rng, customer.sarcastic))
        elif isinstance(fact, Note):
            failing = value != next(iter(fact.lines))
            say("customer", rng.choice(CLAIMS if customer.claim and failing else fact.prompt))
            say("system", fact.lines[str(value)])
        elif isinstance(fact, DaysAgo):
            say("customer", fact.say(int(str(value)), today))
        else:
            say("customer", fact.say(int(str(value)), rng))
        told.setdefault(fact.name, []).append(value)
    raise RuntimeError(f"scenario {graph.name}: a conversation did not end in {MAX_TURNS} turns")


def generator(scenario: Scenario, name: str, simplified: bool) -> Generator:
    schema = output_schema(scenario)
    needed = requirement(schema)

    def generate(seed: int, files_dir: Path) -> GeneratedData:
        rng = random.Random(f"{seed}|{scenario.graph.name}")  # the ablation draws the same
        tasks = []
        for index in range(scenario.instances):
            customer = scenario.customer(index, rng)
            for cut, dialogue in enumerate(converse(scenario, customer, rng)):
                if simplified:
                    dialogue = simplify(dialogue, scenario.facts)
                inputs = {
                    "objective": scenario.graph.objective,
                    "dialogue": dialogue,
                    "output_requirement": needed,
                }
                task_id = f"{scenario.graph.name}-{index:03d}-{cut:02d}"
                tasks.append(Task(task_id, name, inputs, kind="json_answer"))
        return GeneratedData(tables={}, tasks=tasks)

    return generate


def policy(scenario: Scenario) -> Policy:
    graph = scenario.graph
    calculated = {f.name for f in scenario.facts if isinstance(f, CALCULATED)} | {WAITED}
    counted = {c.fact for s in graph.steps for e in s.edges for c in e.when if c.count}

    def solve(task: Task, run: PolicyRun) -> Solution:
        reading = read(task.inputs["dialogue"], scenario.facts)
        found = walk(graph, reading.facts)
        sources = []
        if reading.devices & {"noise", "reversal", "sarcasm"}:
            sources.append("conversation")
        if found.used & (calculated | counted):
            sources.append("calculation")
        wide = any(len(graph.by_id[s].edges) > WIDE for s in found.path)
        if wide or found.looped or "claim" in reading.devices:
            sources.append("route")
        step = graph.by_id[found.step]
        decisions = {
            "scenario": graph.name,
            "shape": graph.shape,
            "sources": sources,
            "devices": sorted(reading.devices),
            "path": found.path,
        }
        return Solution({"step": step.id, "reply": step.script}, decisions)

    return solve


def scenario_pack(name: str, simplified: bool = False) -> DomainPack:
    """``maze/<name>``; ``simplified``: ``maze_ablation/<name>``, the same subtasks (same ids,
    same gold) with simplified queries. With ``--sop deciding`` and ``--sop none`` these give
    the paper's S2 and S3 ablations; the plain pack with ``--sop clean`` is the original."""
    scenario = SCENARIOS[name]
    full = f"{ABLATION_FAMILY if simplified else FAMILY}/{name}"
    return DomainPack(
        name=full,
        title=f"SOP-Maze {scenario.graph.shape}: {scenario.graph.title}"
        + (" (simplified queries)" if simplified else ""),
        folder=Path(__file__).parent,
        tools=[],
        generate=generator(scenario, full, simplified),
        solve=policy(scenario),
        kind="json_answer",
        input_schema=INPUT_SCHEMA,
        output_schema=output_schema(scenario),
        sop_files={variant: f"{name}/sop_{variant}.md" for variant in SOP_VARIANTS},
    )


def write_sop_files() -> list[Path]:
    """Render every scenario's SOP variants into its folder (``python -m
    sopgym.domains.maze.pack``); a test checks the committed files match the graphs."""
    written = []
    for name, scenario in SCENARIOS.items():
        for variant in SOP_VARIANTS:
            path = Path(__file__).parent / name / f"sop_{variant}.md"
            path.write_text(render(scenario.graph, variant))
            written.append(path)
    return written


if __name__ == "__main__":
    for written in write_sop_files():
        print(written)

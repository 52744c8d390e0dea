"""The SOP-Maze-style family: counts and shapes, gold read back from the words of each
partial conversation, the difficulty tags, and the SOP files rendered from the graphs."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from sopgym.core.registry import families, load_domain, select_domains
from sopgym.core.tasks import Task
from sopgym.domains.maze.graph import SOP_VARIANTS, render, walk
from sopgym.domains.maze.pack import WIDE
from sopgym.domains.maze.scenarios import SCENARIOS
from sopgym.domains.maze.speech import Choice, read
from tests.helpers import domain_data

MAZE = select_domains(["maze"])


def _instance(task: Task) -> str:
    return task.id.rsplit("-", 1)[0]


def test_the_family_has_ten_scenarios_of_both_shapes_and_enough_subtasks() -> None:
    assert families()["maze"] == MAZE and len(MAZE) >= 10
    shapes = Counter(SCENARIOS[n.split("/")[1]].graph.shape for n in MAZE)
    assert shapes["LRS"] >= 5 and shapes["HRS"] >= 5
    total = 0
    for name in MAZE:
        data = domain_data(name)
        assert len({_instance(t) for t in data.tasks}) >= 25, name
        assert all(t.kind == "json_answer" for t in data.tasks)
        total += len(data.tasks)
    assert total >= 2500


def _depth(step_id: str) -> int:
    return step_id.count(".") + 1


@pytest.mark.parametrize("name", [n for n, s in SCENARIOS.items() if s.graph.shape == "LRS"])
def test_wide_scenarios_are_shallow_with_a_parent_of_more_than_ten_children(name: str) -> None:
    graph = SCENARIOS[name].graph
    assert max(_depth(s.id) for s in graph.steps) <= 3
    assert len({e.to for e in graph.root.edges}) > WIDE


@pytest.mark.parametrize("name", [n for n, s in SCENARIOS.items() if s.graph.shape == "HRS"])
def test_deep_scenarios_loop_back_and_jump_ahead(name: str) -> None:
    graph = SCENARIOS[name].graph
    order = {s.id: i for i, s in enumerate(graph.steps)}
    edges = [(s.id, e.to) for s in graph.steps for e in s.edges]
    assert any(order[to] <= order[src] for src, to in edges)  # loops back
    assert any(order[to] > order[src] + 2 for src, to in edges)  # jumps ahead
    data = domain_data(f"maze/{name}")
    assert max(len(g.decisions["path"]) for g in data.gold.values()) >= 8


@pytest.mark.parametrize("name", MAZE)
def test_the_gold_step_is_the_step_the_agent_took_next(name: str) -> None:
    """The policy reads the words back; the generator's agent walked the customer's truth:
    each cut's gold is what the agent said right after the cut in the longer conversation."""
    data = domain_data(name)
    by_instance: dict[str, list[Task]] = {}
    for task in data.tasks:
        by_instance.setdefault(_instance(task), []).append(task)
    checked = 0
    for cuts in by_instance.values():
        for task, later in itertools.pairwise(cuts):
            said = later.inputs["dialogue"][len(task.inputs["dialogue"])]
            assert said["role"] == "agent"
            assert said["text"] == data.gold[task.id].outputs["reply"], task.id
            checked += 1
    assert checked >= len(data.tasks) - len(by_instance)


@pytest.mark.parametrize("name", MAZE)
def test_tags_stay_out_of_the_inputs_and_every_source_occurs(name: str) -> None:
    data = domain_data(name)
    sources = Counter(s for g in data.gold.values() for s in g.decisions["sources"])
    assert set(sources) == {"conversation", "calculation", "route"} and min(sources.values()) >= 3
    for task in data.tasks[:50]:
        text = str(task.inputs)
        assert "sources" not in text and "calculation" not in text
    devices = Counter(d for g in data.gold.values() for d in g.decisions["devices"])
    assert {"noise", "sarcasm"} <= set(devices)
    assert (
        "reversal" if SCENARIOS[name.split("/")[1]].graph.shape == "LRS" else "claim"
    ) in devices


def test_a_reversed_request_moves_the_step_to_the_new_request() -> None:
    scenario = SCENARIOS["telecom_requests"]
    need = scenario.fact("need")
    assert isinstance(need, Choice)
    dialogue = [
        {"role": "system", "time": "09:00:00", "text": "[system] Session opened on 2026-03-01."},
        {"role": "customer", "time": "09:00:00", "text": "Hi, I need some help please."},
        {"role": "agent", "time": "09:01:00", "text": "What can I do for you?"},
        {"role": "customer", "time": "09:01:30", "text": "um, " + need.phrases["sim"][0]},
        {"role": "agent", "time": "09:02:00", "text": "Okay."},
    ]
    reading = read(dialogue, scenario.facts)
    assert walk(scenario.graph, reading.facts).step == "1.4" and reading.devices == {"noise"}
    dialogue.append(
        {"role": "customer", "time": "09:03:00", "text": "Wait, no. " + need.sarcasm["outage"]}
    )
    reading = read(dialogue, scenario.facts)
    assert reading.devices == {"noise", "reversal", "sarcasm"}
    assert walk(scenario.graph, reading.facts).step == "1.8"  # one minute's wait: no apology
    dialogue[2]["time"] = "09:20:00"  # a twenty-minute first wait
    assert walk(scenario.graph, read(dialogue, scenario.facts).facts).step == "1.13"


def test_dates_and_medians_are_computed_from_the_words() -> None:
    scenario = SCENARIOS["telecom_requests"]
    opening = [
        {"role": "system", "time": "09:00:00", "text": "[system] Session opened on 2026-03-01."},
        {"role": "customer", "time": "09:00:00", "text": "I'd like to cancel my contract."},
        {"role": "agent", "time": "09:00:30", "text": "..."},
    ]
    for date, step in [("2026-02-15", "1.9.1"), ("2026-02-14", "1.9.2")]:  # 14 vs 15 days
        said = {"role": "customer", "time": "09:01:00", "text": f"I signed the contract on {date}."}
        found = walk(scenario.graph, read([*opening, said], scenario.facts).facts)
        assert found.step == step
    opening[1]["text"] = "I'd like to upgrade my phone."
    for quotes, step in [("$900, $100, $550", "1.1.1"), ("$580, $700, $601, $20, $990", "1.1.2")]:
        said = {
            "role": "customer",
            "time": "09:01:00",
            "text": f"Other shops quoted me {quotes} for the new model.",
        }
        assert walk(scenario.graph, read([*opening, said], scenario.facts).facts).step == step


@pytest.mark.parametrize("name", MAZE)
def test_the_sop_files_are_rendered_from_the_graph(name: str) -> None:
    domain = load_domain(name)
    graph = SCENARIOS[name.split("/")[1]].graph
    assert set(domain.sop_files) == set(SOP_VARIANTS)
    for variant in SOP_VARIANTS:
        assert domain.sop(variant) == render(graph, variant), (
            "rerun python -m sopgym.domains.maze.pack"
        )
    assert "Suggested script" not in domain.sop("deciding") and "step 1" not in domain.sop("none")
    assert len(domain.sop("deciding")) < len(domain.sop("clean"))


def test_sop_files_live_in_the_scenario_folders() -> None:
    folder = Path(load_domain(MAZE[0]).folder)
    assert {p.parent.name for p in folder.glob("*/sop_clean.md")} == set(SCENARIOS)


@pytest.mark.parametrize("name", select_domains(["maze_ablation"]))
def test_the_simplified_query_ablation_keeps_every_subtask_and_its_gold(name: str) -> None:
    simplified, original = domain_data(name), domain_data(name.replace("maze_ablation", "maze"))
    assert [t.id for t in simplified.tasks] == [t.id for t in original.tasks]
    for task_id, gold in original.gold.items():
        plain = simplified.gold[task_id]
        assert plain.outputs == gold.outputs and plain.decisions["path"] == gold.decisions["path"]
        assert plain.decisions["devices"] == [] and "conversation" not in plain.decisions["sources"]
    devices = Counter(d for g in original.gold.values() for d in g.decisions["devices"])
    assert devices["noise"] and devices["sarcasm"]  # what the ablation took away was there

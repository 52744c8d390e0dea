"""Stage 1 in TELLER's setting as a task: every signature of a scenario's ~280-tool catalog,
and a ``workflow_key``; the gold is the scenario's APIs and their edges (the paper's graph),
never the links the back-office distractors make among themselves."""

from __future__ import annotations

import pytest

from sopgym.agents.prompts import case_message, tool_free_prompt
from sopgym.core.answers import extract_final_answer
from sopgym.core.depgraph import workflow_graph
from sopgym.domains.banking._engine.graph import CATALOG_TASKS
from sopgym.domains.banking._engine.pack import scenario_of
from sopgym.evaluation.scorers.graph import compare_graphs, graph_parts
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile
from tests.helpers import domain_data

PAPER_CATALOG = {"loans": 284, "account_management": 274, "credit_cards": 275, "savings": 275,
                 "investments": 281}  # fmt: skip


def _catalog_tasks(scenario: str) -> list:
    data = domain_data(f"banking/{scenario}_graph")
    found = [t for t in data.tasks if "workflow_key" in t.inputs]
    assert len(found) == CATALOG_TASKS
    return [(data, task) for task in found]


@pytest.mark.parametrize("scenario", sorted(PAPER_CATALOG))
def test_the_whole_catalog_task_has_the_papers_graph_as_gold(scenario: str) -> None:
    rules = scenario_of(scenario)
    for data, task in _catalog_tasks(scenario):
        assert len(task.inputs["apis"]) == PAPER_CATALOG[scenario]
        gold = data.gold[task.id].outputs
        assert set(gold["nodes"]) == {api.name for api in rules.apis}
        assert sorted(map(tuple, gold["edges"])) == rules.edges()
        assert (len(gold["nodes"]), len(gold["edges"])) == rules.paper_graph  # Table 4
        # every signature as a node and every dependency as an edge: the rule of the other
        # tasks, which links the back-office distractors among themselves
        signatures = [(a["name"], a["inputs"], a["outputs"]) for a in task.inputs["apis"]]
        nodes, edges = workflow_graph(signatures)
        whole = compare_graphs((set(nodes), set(edges)), graph_parts(gold) or (set(), set()))
        assert whole["node_precision"] < 0.1 and whole["edge_precision"] < 1.0
        assert whole["node_recall"] == whole["edge_recall"] == 1.0


def test_the_scripted_model_answers_the_workflow_from_the_prompt() -> None:
    """Perfect: the gold graph, worked out from the signatures and the key in the prompt; a
    profile that selects wrong nodes lowers node precision and recall."""
    for profile, perfect in (("perfect", True), ("wrong_nodes,seed=1", False)):
        for data, task in _catalog_tasks("loans"):
            model = ScriptedModel([data], parse_profile(profile))
            messages = [
                {"role": "system", "content": tool_free_prompt(data.domain.output_schema)},
                {"role": "user", "content": case_message(data.domain.sop("abstract"),
                                                         task.inputs)},
            ]  # fmt: skip
            reply = model.respond({"model": f"scripted:{profile}", "messages": messages})
            answer = extract_final_answer(reply["choices"][0]["message"]["content"],
                                          ["nodes", "edges"])  # fmt: skip
            predicted, gold = graph_parts(answer), graph_parts(data.gold[task.id].outputs)
            assert predicted is not None and gold is not None
            metrics = compare_graphs(predicted, gold)
            assert (metrics["node_f1"] == metrics["edge_f1"] == 1.0) is perfect
            if not perfect:
                assert metrics["node_precision"] < 1.0 and metrics["node_recall"] < 1.0

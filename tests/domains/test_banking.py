"""The banking family: the scenarios' shape against the paper's figures, the per-episode
database (constraints refused whole, 200 concurrent episodes isolated) and stage 1 with the
scripted model (perfect and perturbed profiles)."""

from __future__ import annotations

import collections
import itertools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from sopgym.agents.prompts import case_message, tool_free_prompt
from sopgym.cli import main
from sopgym.client import GatewayClient
from sopgym.core.answers import extract_final_answer
from sopgym.core.errors import ToolError
from sopgym.core.registry import load_domain, select_domains
from sopgym.core.tables import Tables
from sopgym.core.tools import ToolContext
from sopgym.core.trajectory import Trajectory
from sopgym.domains.banking._engine import back_office, distractors
from sopgym.domains.banking._engine.pack import SCENARIO_NAMES, scenario_of
from sopgym.domains.banking._engine.policy import branches
from sopgym.domains.banking._engine.sop import GRAPH_RENDER, GRAPH_VARIANTS, RENDER, VARIANTS
from sopgym.domains.banking._engine.spec import STAGES
from sopgym.domains.banking._engine.tools import parameters
from sopgym.evaluation.scorers import Case, final_state
from sopgym.evaluation.scorers.graph import compare_graphs, graph_parts
from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile
from sopgym.services.tools.app import create_app
from tests.helpers import DATA_ROOT, domain_data

# the paper's Table 1: tasks, (nodes, edges), output fields
PAPER = {
    "loans": (214, (20, 34), 6),
    "account_management": (214, (10, 16), 6),
    "credit_cards": (221, (11, 17), 3),
    "savings": (200, (13, 26), 3),
    "investments": (184, (17, 23), 3),
}
EPISODE = "x-sopgym-episode"


def test_banking_family_selects_the_five_scenarios_and_their_graph_packs() -> None:
    assert select_domains(["banking"]) == sorted(
        [f"banking/{n}" for n in PAPER] + [f"banking/{n}_graph" for n in PAPER]
    )


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_scenario_matches_the_papers_figures(name: str) -> None:
    scenario = scenario_of(name)
    tasks, graph, outputs = PAPER[name]
    assert (len(scenario.apis), len(scenario.edges())) == graph == scenario.paper_graph
    assert {a.stage for a in scenario.apis} <= set(STAGES)
    assert len(scenario.output_fields) == outputs
    assert len(domain_data(f"banking/{name}").tasks) >= tasks
    wide = [a.name for a in scenario.apis if len(parameters(scenario, a)) > 6]
    assert len(wide) * 2 > len(scenario.apis), wide
    # every stored dependency is an edge of the derived graph, and every API is in it
    assert load_domain(f"banking/{name}").dependencies == scenario.dependencies()
    assert {n for edge in scenario.edges() for n in edge} == set(scenario.api_map)
    # what the write-back records is known on every path (screening always runs)
    screened = {f for api in scenario.stage("screen") for f in api.outputs}
    assert set(scenario.recorded) <= screened
    assert {c.field for c in scenario.checks} <= screened | set(scenario.given)
    # distractors never join the scenario's graph
    fields = {f for api in scenario.apis for f in (*parameters(scenario, api), *api.outputs)}
    assert not fields & (distractors.PARAMETER_NAMES | back_office.PARAMETER_NAMES)


# the paper's A.3: the whole catalog of each scenario (core, financial, non-financial)
PAPER_CATALOG = {"loans": 284, "account_management": 274, "credit_cards": 275, "savings": 275,
                 "investments": 281}  # fmt: skip


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_catalog_has_the_papers_size_with_45_financial_distractors(name: str) -> None:
    pack = load_domain(f"banking/{name}")
    names = [t.name for t in pack.all_tools()]
    assert len(names) == len(set(names)) == PAPER_CATALOG[name] == scenario_of(name).paper_catalog
    assert pack.distractors[:45] == distractors.FINANCIAL_DISTRACTORS
    non_financial = pack.distractors[45:]
    assert len(non_financial) > len(names) / 2
    assert all(t in back_office.BACK_OFFICE_TOOLS for t in non_financial)


def test_back_office_tools_answer_their_synthetic_records() -> None:
    tools = {t.name: t for t in back_office.BACK_OFFICE_TOOLS}
    room = tools["get_meeting_room"].spec
    assert room.input_schema["required"] == ["meeting_room_id"]
    context = ToolContext(tables=Tables({}))  # the back office keeps its own records
    found = tools["get_meeting_room"]({"meeting_room_id": "MR-001"}, context)
    assert found["meeting_room_id"] == "MR-001" and found["site"] in back_office.ATTRIBUTES["site"]
    listed = tools["list_meeting_rooms_by_site"]({"site": found["site"]}, context)
    counted = tools["count_meeting_rooms_by_site"]({"site": found["site"]}, context)
    assert listed["count"] == counted["count"] >= 1
    assert "MR-001" in [i["meeting_room_id"] for i in listed["items"]] or listed["count"] > 10
    total = sum(tools["count_meeting_rooms_by_site"]({"site": s}, context)["count"]
                for s in back_office.ATTRIBUTES["site"])  # fmt: skip
    assert total == back_office.RECORDS_PER_KIND
    with pytest.raises(ToolError) as refused:
        tools["get_meeting_room"]({"meeting_room_id": "MR-999"}, context)
    assert (refused.value.code, refused.value.field) == ("not_found", "meeting_room_id")


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_every_sop_branch_is_taken_by_three_tasks_and_instructions_are_vague(name: str) -> None:
    data = domain_data(f"banking/{name}")
    taken = collections.Counter(g.decisions["branch"] for g in data.gold.values())
    assert set(taken) == set(branches(scenario_of(name)))
    assert min(taken.values()) >= 3
    for task in data.tasks:
        key = task.inputs["application_id"]
        assert task.inputs["instruction"].startswith("Handle the ") and key in task.inputs[
            "instruction"]


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_committed_sop_texts_are_what_the_scenario_renders(name: str) -> None:
    scenario = scenario_of(name)
    folder = Path(load_domain(f"banking/{name}").folder)
    for variant, filename in VARIANTS.items():
        assert (folder / filename).read_text() == RENDER[variant](scenario), filename
    graph_folder = folder.parent / f"{name}_graph"
    for variant, filename in GRAPH_VARIANTS.items():
        assert (graph_folder / filename).read_text() == GRAPH_RENDER[variant](scenario)
    abstract = (folder / VARIANTS["abstract"]).read_text()
    assert not any(f"`{api.name}`" in abstract for api in scenario.apis), "goals, not tools"


def test_abstract_sop_is_selectable_and_refused_where_a_pack_has_none() -> None:
    runner = CliRunner()
    refused = runner.invoke(main, ["run", "banking/loans", "patient_intake", "--sop", "abstract"])
    assert refused.exit_code == 2
    assert "no SOP variant 'abstract' in patient_intake" in refused.output
    assert "abstract" in load_domain("banking/loans").sop_files


# ---- the per-episode database: constraints refused whole ----
@pytest.fixture(scope="module")
def loans() -> TestClient:
    domain_data("banking/loans")
    return TestClient(create_app(load_domain("banking/loans"), DATA_ROOT))


_EPISODES = itertools.count()


def _open(client: TestClient, task_id: str) -> str:
    episode = f"constraints-{next(_EPISODES)}"
    response = client.post("/v1/episodes", json={"episode_id": episode, "task_id": task_id})
    assert response.status_code == 201, response.text
    return episode


def _call(client: TestClient, episode: str, name: str, arguments: dict) -> Any:
    return client.post(f"/v1/tools/{name}", json=arguments, headers={EPISODE: episode})


def _first_gold(branch: str) -> Any:
    data = domain_data("banking/loans")
    return next(g for g in data.gold.values() if g.decisions["branch"] == branch)


def _close(client: TestClient, episode: str) -> Any:
    return client.delete(f"/v1/episodes/{episode}").json()["final_state"]


def test_an_approval_above_the_limit_is_refused_and_writes_nothing(loans: TestClient) -> None:
    gold = _first_gold("approve:committee")
    episode = _open(loans, gold.task_id)
    first_approval = next(i for i, c in enumerate(gold.calls) if c.name == "request_loan_approval")
    for call in gold.calls[:first_approval]:
        assert _call(loans, episode, call.name, call.arguments).status_code == 200
    arguments = dict(gold.calls[first_approval].arguments)
    over = _call(loans, episode, "request_loan_approval", {**arguments, "amount": 10**9})
    assert over.status_code == 422
    assert (over.json()["error"]["code"], over.json()["error"]["field"]) == ("invalid_value",
                                                                             "amount")
    negative = _call(loans, episode, "request_loan_approval", {**arguments, "amount": -5})
    assert (negative.status_code, negative.json()["error"]["field"]) == (422, "amount")
    skipped = _call(loans, episode, "request_loan_approval", {**arguments, "level": "manager"})
    assert (skipped.status_code, skipped.json()["error"]["field"]) == (422, "level")
    state = _close(loans, episode)
    assert state["approvals"] == [] and state["decision_log"] == []
    assert state["application"]["status"] == "pending"


def test_a_write_back_over_the_limit_is_rolled_back_whole(loans: TestClient) -> None:
    gold = _first_gold("counter_offer:officer")
    episode = _open(loans, gold.task_id)
    for call in gold.calls[:-1]:
        assert _call(loans, episode, call.name, call.arguments).status_code == 200
    write = gold.calls[-1].arguments
    # the log entry is inserted first; the update's CHECK (granted <= limit) fails it all
    over = _call(loans, episode, "update_loan_application", {**write, "granted_amount": 10**9})
    assert over.status_code == 422, over.text
    assert over.json()["error"]["field"] == "granted_amount"
    assert "CHECK" in over.json()["error"]["message"]
    unapproved = _call(loans, episode, "update_loan_application", {**write, "level": "committee"})
    assert (unapproved.status_code, unapproved.json()["error"]["field"]) == (422, "level")
    state = _close(loans, episode)
    assert state["decision_log"] == [] and state["application"]["status"] == "pending"
    assert state["application"]["granted_amount"] is None
    assert len(state["approvals"]) == 1  # the officer's, made before the refused writes


def test_unknown_applications_and_decided_ones_are_refused(loans: TestClient) -> None:
    gold = _first_gold("reject:sanctions_match")
    episode = _open(loans, gold.task_id)
    unknown = _call(loans, episode, "get_loan_application", {"application_id": "LN-99999"})
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "not_found")
    for call in gold.calls:
        assert _call(loans, episode, call.name, call.arguments).status_code == 200
    again = _call(loans, episode, gold.calls[-1].name, gold.calls[-1].arguments)
    assert (again.status_code, again.json()["error"]["field"]) == (422, "application_id")
    assert _close(loans, episode) == gold.final_state


def test_a_wrong_value_from_the_agent_is_refused_naming_the_field(loans: TestClient) -> None:
    gold = _first_gold("approve:officer")
    episode = _open(loans, gold.task_id)
    fetch, identity = gold.calls[0], gold.calls[1]
    assert _call(loans, episode, fetch.name, fetch.arguments).status_code == 200
    wrong = _call(loans, episode, identity.name, {**identity.arguments, "annual_income": 1})
    assert (wrong.status_code, wrong.json()["error"]["field"]) == (422, "annual_income")
    _close(loans, episode)


# ---- final-state tiers: a harmless difference passes, a wrong write fails ----
def _final_state_score(gold: Any, state: Any) -> Any:
    domain = load_domain("banking/loans")
    task = next(t for t in domain_data("banking/loans").tasks if t.id == gold.task_id)
    trajectory = Trajectory(gold.task_id, "e", finished=True, outputs=gold.outputs,
                            final_state=state)  # fmt: skip
    return final_state()(Case(task, trajectory, gold, domain))


def _played(loans: TestClient, gold: Any, write_back: dict[str, Any]) -> Any:
    """The episode's final state after the gold calls, the write-back's arguments changed."""
    episode = _open(loans, gold.task_id)
    for call in gold.calls[:-1]:
        assert _call(loans, episode, call.name, call.arguments).status_code == 200
    last = gold.calls[-1]
    written = _call(loans, episode, last.name, {**last.arguments, **write_back})
    assert written.status_code == 200, written.text
    return _close(loans, episode)


def test_final_state_passes_a_harmless_difference_and_fails_a_wrong_write(
    loans: TestClient,
) -> None:
    gold = _first_gold("counter_offer:officer")
    assert _final_state_score(gold, _played(loans, gold, {})).metrics == {
        "differences": [], "harmless": []}  # fmt: skip
    noted = _final_state_score(gold, _played(loans, gold, {"note": "customer called twice"}))
    assert noted.value == 1.0
    assert noted.metrics == {"differences": [], "harmless": ["$.application.decision_note"]}
    assert "harmless" in noted.explanation
    granted = gold.calls[-1].arguments["granted_amount"]
    wrong = _played(loans, gold, {"granted_amount": granted - 1, "note": "rounded down"})
    score = _final_state_score(gold, wrong)
    assert score.value == 0.0
    assert score.metrics == {"differences": ["$.application.granted_amount"],
                             "harmless": ["$.application.decision_note"],
                             "expected": {"$.application.granted_amount": granted}}  # fmt: skip


# ---- 200 concurrent episodes through the gateway (about 6 s) ----
def test_200_concurrent_episodes_never_see_each_others_writes(tmp_path: Path) -> None:
    name = "banking/credit_cards"
    data = domain_data(name)
    golds = [data.gold[t.id] for t in data.tasks[:200]]
    with ProcessGroup() as group:
        service = f"http://127.0.0.1:{free_port()}"
        group.start("tools", sopgym_command("serve-tools", name, "--port",
                                            service.rsplit(":", 1)[1], "--data-root",
                                            str(DATA_ROOT)),
                    tmp_path / "tools.log", ready_url=f"{service}/readyz").wait_ready()
        gateway = f"http://127.0.0.1:{free_port()}"
        group.start("gateway", sopgym_command("gateway", "--port", gateway.rsplit(":", 1)[1],
                                              "--service", f"{name}={service}"),
                    tmp_path / "gateway.log", env={"SOPGYM_ADMIN_TOKEN": "admin"},
                    ready_url=f"{gateway}/readyz").wait_ready()
        client = GatewayClient(gateway, retries=0)
        episodes = [client.open(g.task_id, name) for g in golds]  # all 200 open at once
        steps = [(e, c) for i in range(max(len(g.calls) for g in golds))
                 for e, g in zip(episodes, golds, strict=True) if i < len(g.calls)
                 for c in [g.calls[i]]]  # fmt: skip

        def play(step: tuple[Any, Any]) -> bool:
            episode, call = step
            return bool(episode.call(call.name, call.arguments).ok)

        by_episode = collections.defaultdict(list)
        for episode, call in steps:  # each episode's calls in order, episodes interleaved
            by_episode[episode.id].append((episode, call))
        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(lambda calls: all(map(play, calls)), by_episode.values()))
        assert all(results)
        for episode, gold in zip(episodes, golds, strict=True):
            episode.finish(gold.outputs)
            # identical to the same task run alone (its gold, derived on a fresh database)
            assert client.record(episode.id, "admin")["final_state"] == gold.final_state
        client.close()


# ---- stage 1: the scripted model's graphs ----
def _scripted_graph(
    profile: str, name: str, log: Path | None = None
) -> tuple[list[dict], list[Any]]:
    """The scripted model's answers to every graph task of ``name``, and their golds."""
    data = domain_data(name)
    model = ScriptedModel([data], parse_profile(profile), log)
    answers, golds = [], []
    for task in data.tasks:
        messages = [
            {"role": "system", "content": tool_free_prompt(data.domain.output_schema)},
            {"role": "user", "content": case_message(data.domain.sop(), task.inputs)},
        ]
        reply = model.respond({"model": f"scripted:{profile}", "messages": messages})
        answer = extract_final_answer(reply["choices"][0]["message"]["content"],
                                      ["nodes", "edges"])  # fmt: skip
        assert answer is not None
        answers.append(answer)
        golds.append(data.gold[task.id].outputs)
    return answers, golds


def _mean(metric: str, answers: list[dict], golds: list[Any]) -> float:
    values = []
    for answer, gold in zip(answers, golds, strict=True):
        predicted, expected = graph_parts(answer), graph_parts(gold)
        assert predicted is not None and expected is not None
        values.append(compare_graphs(predicted, expected)[metric])
    return sum(values) / len(values)


@pytest.mark.parametrize("name", [f"banking/{n}_graph" for n in ("loans", "savings")])
def test_stage_1_perfect_scripted_model_scores_f1_one(name: str) -> None:
    answers, golds = _scripted_graph("perfect", name)
    for metric in ("node_f1", "edge_f1", "path_overlap"):
        assert _mean(metric, answers, golds) == 1.0


def test_stage_1_perturbed_profiles_lower_the_scores_they_should(tmp_path: Path) -> None:
    name = "banking/loans_graph"
    log = tmp_path / "injections.jsonl"
    dropped = _scripted_graph("skip_step=0.3,seed=1", name, log)
    assert _mean("edge_precision", *dropped) == 1.0  # only true edges, fewer of them
    assert _mean("edge_recall", *dropped) < 0.9
    assert _mean("node_f1", *dropped) == 1.0
    # every dropped edge is in the injection log, and nothing else
    logged = {(r["task_id"], tuple(r["expected"])) for r in map(orjson.loads, log.open("rb"))}
    data = domain_data(name)
    missing = {
        (task.id, tuple(edge))
        for task, answer in zip(data.tasks, dropped[0], strict=True)
        for edge in data.gold[task.id].outputs["edges"]
        if edge not in answer["edges"]
    }
    assert logged == missing and missing
    invented = _scripted_graph("hallucinated_tool=0.3,seed=1", name)
    assert _mean("edge_recall", *invented) == 1.0
    assert _mean("edge_precision", *invented) < 0.95
    reversed_ = _scripted_graph("wrong_tool=0.3,seed=1", name)
    assert _mean("edge_precision", *reversed_) < 0.9 and _mean("edge_recall", *reversed_) < 0.9

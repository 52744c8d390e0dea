"""The papers' own definitions beside our strict scores (sopgym/evaluation/profiles): each
definition pinned by a constructed episode on which the paper's rule and ours disagree."""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sopgym.core.registry import domain_names, load_domain
from sopgym.core.tasks import Gold
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.profiles import PaperProfile, UnknownProfile, differing, sopbench, teller
from sopgym.evaluation.scoring import TaskScore, score_episode, summarize
from tests.helpers import domain_data

FLAGGING = "content_flagging"  # one of our ten SOP-Bench-style packs
LOANS = "banking/loans"
# a paper's profile of a user's own: every episode correct, its figures the episodes counted
LENIENT = PaperProfile(
    lambda trajectory, gold, strict, error: {"correct": True},
    lambda episodes: {"episodes": len(episodes)},
)


def _score(
    domain: str,
    index: int,
    trajectory: Trajectory | None,
    outputs: Any = None,
    infra: str | None = None,
    agent_error: str | None = None,
) -> TaskScore:
    data = domain_data(domain)
    task = data.tasks[index]
    gold = data.gold[task.id]
    if outputs is not None:
        gold = replace(gold, outputs=outputs)
    return score_episode(load_domain(domain), task, trajectory, gold, infra, agent_error)


def _answered(domain: str, index: int, outputs: Any, finished: bool = True,
              extra: list[CallRecord] | None = None) -> Trajectory:  # fmt: skip
    """The gold calls made (plus ``extra``), then ``outputs`` given as the answer."""
    gold = domain_data(domain).gold[domain_data(domain).tasks[index].id]
    calls = [CallRecord(c.name, c.arguments, 200) for c in gold.calls] + (extra or [])
    return Trajectory(gold.task_id, "e", calls, finished, outputs if finished else None,
                      final_state=gold.final_state)  # fmt: skip


# ---- SOP-Bench: the answer match ----


@pytest.mark.parametrize(
    ("predicted", "expected", "agree"),
    [
        ("invalid", "valid", True),  # "valid" is contained in "invalid"
        ("e", "escalate", True),  # "e" is contained in "escalate"
        ("approve (pending review)", "approve", True),  # text appended to the gold
        ("Escalate", "escalate", True),
        ("needs-review", "needs_review", True),
        ("N/A", "", True),  # an empty expected value matches any null-like answer
        (None, "", True),
        ("unknown", None, True),
        ("allow", "", False),  # ... and nothing else
        ("none", "allow", False),
        ("approve", "reject", False),
        (True, "true", True),
    ],
)
def test_sopbench_answer_match(predicted: Any, expected: Any, agree: bool) -> None:
    assert sopbench.values_agree(predicted, expected) is agree


def test_sopbench_keys_are_case_folded_and_every_field_must_agree() -> None:
    expected = {"final_decision": "valid", "risk": "high"}
    assert sopbench.field_verdicts({"Final_Decision": "invalid", "RISK": "High"}, expected) == {
        "final_decision": True,
        "risk": True,
    }
    assert sopbench.field_verdicts({"final_decision": "valid"}, expected)["risk"] is False


def test_sopbench_profile_accepts_what_the_strict_scorer_refuses() -> None:
    gold = domain_data(FLAGGING).gold[domain_data(FLAGGING).tasks[0].id].outputs
    answer = {key.title(): value for key, value in gold.items()}  # Title Case keys
    answer["Moderation_Action"] = f"{gold['moderation_action']}ed after review"
    score = _score(FLAGGING, 0, _answered(FLAGGING, 0, answer))
    assert not score.success  # ours: keys as given, values equal
    found = score.paper["sopbench"]
    assert found["completed"] and found["correct"]
    assert found["differs"] == ["correct"]
    assert differing(score.to_json()) == {"sopbench": ["correct"]}


def test_sopbench_step_limit_completes_an_unknown_tool_does_not() -> None:
    gold = domain_data(FLAGGING).gold[domain_data(FLAGGING).tasks[0].id].outputs
    said = "StepLimitExceeded: step limit of 40 model turns reached"
    limited = _score(FLAGGING, 0, _answered(FLAGGING, 0, None, finished=False), agent_error=said)
    assert not limited.completed  # ours: no answer, not completed
    assert limited.paper["sopbench"]["completed"] and not limited.paper["sopbench"]["correct"]
    assert limited.paper["sopbench"]["differs"] == ["completed"]
    crashed = _score(FLAGGING, 0, _answered(FLAGGING, 0, None, finished=False),
                     agent_error="RuntimeError: boom")  # fmt: skip
    assert not crashed.paper["sopbench"]["completed"] and not crashed.paper["sopbench"]["differs"]
    unknown = CallRecord("lookup_everything", {}, 404, "unknown_tool", in_catalog=False)
    strayed = _score(FLAGGING, 0, _answered(FLAGGING, 0, gold, extra=[unknown]))
    assert strayed.success  # ours: a hallucinated call is counted, the answer still stands
    assert not strayed.paper["sopbench"]["completed"]
    assert "lookup_everything" in strayed.paper["sopbench"]["why"]


def test_sopbench_reads_a_multi_field_answer_from_the_tool_results_when_it_names_none() -> None:
    """SOP-Bench's Evaluator parses the reasoning trace of a multi-field SOP: an answer that
    names no expected field is judged by the fields the tool results hold. Here the tools
    returned every expected value and the agent answered under other keys: correct there,
    wrong here; a step-limited episode with no answer is completed and correct there."""
    gold = domain_data(FLAGGING).gold[domain_data(FLAGGING).tasks[0].id]
    first, *rest = list(gold.outputs.items())
    results = [CallRecord("lookup", {}, 200, result={"noise": 1, first[0]: first[1]}),
               CallRecord("decide", {}, 200, result=dict(rest))]  # fmt: skip
    elsewhere = {"decision": "whatever", "note": "answered under other keys"}
    trajectory = Trajectory(gold.task_id, "e", results, True, elsewhere)
    score = _score(FLAGGING, 0, trajectory)
    theirs = score.paper["sopbench"]
    assert not score.success and theirs["correct"] and theirs["answer_from"] == "tool_results"
    assert theirs["differs"] == ["correct"]
    # an answer that names an expected field is what the source reads, tool results or not
    named = Trajectory(gold.task_id, "e", results, True, {first[0]: first[1]})
    theirs = _score(FLAGGING, 0, named).paper["sopbench"]
    assert not theirs["correct"] and theirs["answer_from"] == "final_answer"
    # no answer at the iteration limit: completed there, and the tool results match
    limited = Trajectory(gold.task_id, "e", results, False, None)
    said = "StepLimitExceeded: step limit of 40 model turns reached"
    score = _score(FLAGGING, 0, limited, agent_error=said)
    assert not score.completed and score.paper["sopbench"]["correct"]
    # fewer than half the expected fields in the tool results: not read from them
    few = Trajectory(gold.task_id, "e", results[:1], True, elsewhere)
    theirs = _score(FLAGGING, 0, few).paper["sopbench"]
    assert not theirs["correct"] and theirs["answer_from"] == "final_answer"


def test_sopbench_infra_failures_count_against_ecr_and_the_headline_is_per_sop() -> None:
    flagging_gold = domain_data(FLAGGING).gold[domain_data(FLAGGING).tasks[0].id].outputs
    intake = "patient_intake"
    intake_gold = domain_data(intake).gold[domain_data(intake).tasks[0].id].outputs
    scores = [
        _score(FLAGGING, 0, _answered(FLAGGING, 0, flagging_gold)),  # right
        _score(intake, 0, _answered(intake, 0, intake_gold)),  # right
        _score(intake, 1, None),  # crashed
        _score(intake, 2, None, infra="model endpoint down"),  # the infrastructure's
    ]
    strict = summarize(scores)
    assert strict["scored"] == 3 and strict["ecr"] == pytest.approx(2 / 3)
    paper = strict["paper"]["sopbench"]
    assert paper["pooled"]["tasks"] == 4 and paper["pooled"]["ecr"] == pytest.approx(2 / 4)
    assert paper["per_sop"][intake]["tsr"] == pytest.approx(1 / 3)
    assert paper["per_sop"][FLAGGING]["tsr"] == 1.0
    # the paper's Weighted Average: per-SOP percentages weighted by their tasks (1 and 3)
    assert paper["weighted_average"]["tsr"] == pytest.approx((1.0 * 1 + 1 / 3 * 3) / 4)
    assert paper["unweighted_mean"]["tsr"] == pytest.approx((1.0 + 1 / 3) / 2)
    assert paper["pooled"]["tsr"] == pytest.approx(2 / 4)
    assert paper["differs"] == 0  # the crash and the infra failure fail in both views
    assert strict["domains"][intake]["paper"]["sopbench"]["per_sop"][intake]["tasks"] == 3


# SOP-Bench's Table 4, FC-Agent: (n, ECR, C-TSR, TSR) per SOP, in percent
TABLE_4_FC = {
    "content_flagging": (226, 0, 0, 0), "customer_service": (208, 100, 14, 14),
    "dangerous_goods": (327, 68, 87, 59), "aircraft_inspection": (150, 100, 1, 1),
    "email_intent": (122, 78, 39, 31), "know_your_business": (122, 100, 19, 19),
    "patient_intake": (90, 33, 0, 0), "video_annotation": (168, 100, 49, 49),
    "video_classification": (198, 100, 52, 52), "warehouse_package_inspection": (200, 41, 32, 13),
}  # fmt: skip


def test_sopbench_headline_is_the_papers_task_weighted_mean_beside_the_plain_one() -> None:
    """The paper's "Weighted Average" FC row (70 / 35 / 27) is the per-SOP mean weighted by
    each SOP's n; the plain mean of the same rows is 72.0 / 29.3 / 23.8."""
    by_sop = {name: {"tasks": n, "ecr": ecr, "c_tsr": c_tsr, "tsr": tsr}
              for name, (n, ecr, c_tsr, tsr) in TABLE_4_FC.items()}  # fmt: skip
    weighted, unweighted = sopbench.headline(by_sop)
    assert [round(weighted[k]) for k in ("ecr", "c_tsr", "tsr")] == [70, 35, 27]
    assert [round(unweighted[k], 1) for k in ("ecr", "c_tsr", "tsr")] == [72.0, 29.3, 23.8]


SOPBENCH_STYLE = {
    "aircraft_inspection", "content_flagging", "customer_service", "dangerous_goods",
    "email_intent", "know_your_business", "patient_intake", "video_annotation",
    "video_classification", "warehouse_package_inspection",
}  # fmt: skip


def test_each_profile_is_declared_by_its_familys_packs_and_by_no_other() -> None:
    """No list of names in the profiles: the ten SOP-Bench-style packs declare ``sopbench``,
    the banking family's stage-2 packs (not their _graph twins) ``teller``, the rest none."""
    declared = {name: load_domain(name).paper_profiles for name in domain_names("")}
    assert {n for n, found in declared.items() if found == ("sopbench",)} == SOPBENCH_STYLE
    stage_2 = {n for n in declared if n.startswith("banking/") and not n.endswith("_graph")}
    assert {n for n, found in declared.items() if found == ("teller",)} == stage_2
    assert {n for n, found in declared.items() if found} == SOPBENCH_STYLE | stage_2
    loans = _score(LOANS, 0, None).paper
    assert "sopbench" not in loans and "teller" in loans


def test_a_pack_may_name_a_profile_of_its_own_by_module_and_attribute() -> None:
    lenient = f"{__name__}:LENIENT"
    pack = replace(load_domain(FLAGGING), paper_profiles=(lenient,))
    data = domain_data(FLAGGING)
    task = data.tasks[0]
    score = score_episode(pack, task, None, data.gold[task.id])
    assert score.paper == {lenient: {"correct": True}}  # keyed by the name the pack gives it
    assert summarize([score])["paper"][lenient] == {"episodes": 1}
    typo = r"unknown paper profile 'sopbenh' \(did you mean sopbench\?"
    with pytest.raises(UnknownProfile, match=typo):
        score_episode(replace(pack, paper_profiles=("sopbenh",)), task, None, data.gold[task.id])


# ---- TELLER ----


def test_teller_acc_needs_every_outcome_field() -> None:
    gold = domain_data(LOANS).gold[domain_data(LOANS).tasks[0].id].outputs
    answer = {**gold, "reason_code": "something_else"}  # the decision right, another field wrong
    score = _score(LOANS, 0, _answered(LOANS, 0, answer))
    assert score.fields["decision"] is True  # our Table-2 column: right
    found = score.paper["teller"]
    assert found["acc"] is False and "acc" in found["differs"]
    right = _score(LOANS, 0, _answered(LOANS, 0, gold))
    assert right.paper["teller"]["acc"] is True and "acc" not in right.paper["teller"]["differs"]


def test_teller_tool_precision_is_over_the_set_of_apis() -> None:
    data = domain_data(LOANS)
    gold = data.gold[data.tasks[0].id]
    retry = CallRecord(gold.calls[0].name, gold.calls[0].arguments, 200)  # the same call again
    score = _score(LOANS, 0, _answered(LOANS, 0, gold.outputs, extra=[retry]))
    assert score.tool_precision is not None and score.tool_precision < 1.0  # ours: calls
    found = score.paper["teller"]
    assert found["tool_precision"] == 1.0 and found["tool_recall"] == 1.0
    assert found["differs"] == ["tool_precision"]
    assert teller.set_precision_recall([], Gold("t", [], {}, {})) == (1.0, 1.0)


def test_teller_type_errors_are_run_time_type_mismatches_and_figures_are_percentages() -> None:
    data = domain_data(LOANS)
    gold = data.gold[data.tasks[0].id]
    fetch = gold.calls[1]
    income = {**fetch.arguments, "annual_income": True}  # past the schema? a boolean for a number
    run_time = CallRecord(fetch.name, income, 422, "invalid_value", "annual_income")
    schema = CallRecord(fetch.name, {}, 422, "missing_argument", "customer_id")
    typed = CallRecord(fetch.name, {"annual_income": "x"}, 422, "type_mismatch", "annual_income")
    score = _score(LOANS, 0, _answered(LOANS, 0, gold.outputs, extra=[run_time, schema]))
    assert (score.errors.get("validation"), score.errors.get("type", 0)) == (2, 0)  # ours
    found = score.paper["teller"]
    assert (found["validation"], found["type"]) == (1, 1)  # the paper's: schema, run time
    assert "type" in found["differs"]
    # a schema's type refusal is the paper's Validation error, our Type error
    score = _score(LOANS, 0, _answered(LOANS, 0, gold.outputs, extra=[run_time, schema, typed]))
    assert (score.errors.get("validation"), score.errors.get("type")) == (2, 1)
    found = score.paper["teller"]
    assert (found["validation"], found["type"]) == (2, 1)
    value_only = CallRecord(fetch.name, fetch.arguments, 422, "invalid_value", "annual_income")
    assert not teller.run_time_type_error(value_only, gold)  # a wrong value of the right type
    assert teller.run_time_type_error(run_time, gold)
    blank = _score(LOANS, 1, Trajectory("t", "e", [], True, {}))
    figures = summarize([score, blank])["paper"]["teller"]["scenarios"]
    loans = figures["loans"]
    calls = found["calls"]
    assert loans["tasks"] == 2 and loans["calls"] == calls
    # the paper's unit is the episode: one of the two has Validation and Type errors
    assert (loans["type_pct"], loans["validation_pct"], loans["blank_pct"]) == (50.0, 50.0, 50.0)
    assert loans["total_error_pct"] == 150.0  # the paper's sum of the three columns
    # per call (kept, labelled): not the paper's figure
    assert loans["type_per_call_pct"] == pytest.approx(100 / calls)
    assert loans["validation_per_call_pct"] == pytest.approx(200 / calls)
    assert figures["all"]["tasks"] == 2


# TELLER's Table 2, Claude-Sonnet-4.5, stage 2: (Acc., P, R, F1) per scenario, and its "all"
TABLE_2_CLAUDE = {
    "loans": (0.2200, 0.9521, 0.8652, 0.9066),
    "account_management": (0.2200, 0.9104, 0.8483, 0.8778),
    "credit_cards": (0.4000, 1.0000, 0.8308, 0.8957),
    "savings": (0.4000, 0.9579, 0.6554, 0.7671),
    "investment": (0.4800, 0.9988, 0.7874, 0.8667),
}
TABLE_2_CLAUDE_ALL = (0.344, 0.9638, 0.7974, 0.8628)


def test_teller_all_row_is_the_mean_of_the_scenario_rows() -> None:
    """The paper's "all" reproduces as the mean of its five rows (F1 too: the F1 of the mean
    P and R would be .8727)."""
    rows = [dict(zip(teller.TABLE_2, figures, strict=True)) for figures in TABLE_2_CLAUDE.values()]
    found = teller.all_row(rows)
    assert [round(found[k], 4) for k in teller.TABLE_2] == list(TABLE_2_CLAUDE_ALL)


def test_teller_all_differs_from_the_pool_when_scenarios_differ_in_size() -> None:
    """Three right loans episodes and one wrong savings one: the paper's all is the mean of
    the two rows (0.5), the pool of episodes 0.75; the pool is kept beside it, labelled."""
    right = {"acc": True, "tool_precision": 1.0, "tool_recall": 1.0, "calls": 2,
             "blank": False, "validation": 0, "type": 0, "differs": []}  # fmt: skip
    wrong = {**right, "acc": False, "tool_recall": 0.5, "validation": 1}
    episodes = [("banking/loans", right)] * 3 + [("banking/savings", wrong)]
    found = teller.aggregate(episodes)
    assert found is not None
    every = found["scenarios"]["all"]
    assert every["acc"] == 0.5 and found["pooled"]["acc"] == 0.75
    assert every["tool_recall"] == 0.75 and found["pooled"]["tool_recall"] == 0.875
    # Table 5 over every episode: one of four has a validation error (1 of 8 calls)
    assert every["validation_pct"] == 25.0 and every["validation_per_call_pct"] == 12.5
    assert found["scenarios"]["savings"]["validation_pct"] == 100.0


def test_teller_graph_properties_are_table_4() -> None:
    found = teller.graph_properties(["loans", "account_management", "nowhere"])
    assert found["loans"]["nodes"] == 20 and found["loans"]["edges"] == 34
    assert found["account_management"]["edges"] == 16
    assert found["loans"]["density"] == pytest.approx(34 / (20 * 19))
    assert "nowhere" not in found


# ---- the report ----


def _report_row(domain: str, index: int, score: TaskScore) -> Any:
    """An evaluation row of ``score`` (the fields the run metrics read)."""
    return {
        "task_id": score.task_id, "domain": domain, "trial": 0, "run_id": "r", "agent": "fc",
        "model": "scripted", "score": score.to_json(), "latency_s": 1.0, "tool_latency_ms": [],
        "trace_complete": True, "llm_calls": 1, "input_tokens": 1, "output_tokens": 1,
        "trace_id": None, "calls_made": [], "tags": {},
    }  # fmt: skip


def test_report_shows_both_definitions_and_the_tasks_they_judge_differently() -> None:
    from rich.console import Console

    from sopgym.evaluation import report
    from sopgym.evaluation.evaluator import _result
    from sopgym.evaluation.two_stage import two_stage

    loans_gold = domain_data(LOANS).gold[domain_data(LOANS).tasks[0].id]
    flagging = domain_data(FLAGGING).gold[domain_data(FLAGGING).tasks[0].id].outputs
    retry = CallRecord(loans_gold.calls[0].name, loans_gold.calls[0].arguments, 200)
    wrong_reason = {**loans_gold.outputs, "reason_code": "x"}
    title_case = {k.title(): v for k, v in flagging.items()}
    scored = [
        (LOANS, _score(LOANS, 0, _answered(LOANS, 0, wrong_reason, extra=[retry]))),
        (FLAGGING, _score(FLAGGING, 0, _answered(FLAGGING, 0, title_case))),
        (FLAGGING, _score(FLAGGING, 1, None, infra="model endpoint down")),
    ]
    rows = [_report_row(domain, i, score) for i, (domain, score) in enumerate(scored)]
    result = _result(rows, [s for _, s in scored], "test", [], [])
    assert result["two_stage"] == two_stage(rows)
    assert result["paper"]["sopbench"]["pooled"]["tasks"] == 2  # the infra failure counts
    assert result["domains"][FLAGGING]["scored"] == 1  # ours: left out
    markdown = report.markdown(result)
    assert "## SOP-Bench's definitions beside ours" in markdown
    assert f"| {FLAGGING} | 2 (1) | 100.0% | 50.0% |" in markdown  # ECR: ours, SOP-Bench's
    assert "## TELLER Table 2, stage 2, the paper's definitions beside ours" in markdown
    assert "| fc/scripted | loans | 1 | 0.0% | 100.0% | 1.000 |" in markdown  # Acc. vs decision
    assert "## TELLER Table 5" in markdown and "## TELLER Table 4" in markdown
    assert "| loans | 20 | 34 | 0.089 | 0.0% | 100.0% |" in markdown
    differing_rows = [line for line in markdown.splitlines() if "| sopbench |" in line
                      or "| teller |" in line]  # fmt: skip
    assert len(differing_rows) == 2
    assert any("acc, tool_precision" in line for line in differing_rows)
    console = Console(record=True, width=250)
    report.print_summary(result, console)
    text = console.export_text()
    assert "SOP-Bench's definitions: ECR 50.0%" in text and "TELLER's definitions" in text


def test_the_wrong_nodes_profile_makes_stage_1_node_selection_fail() -> None:
    from sopgym.services.model.graphs import dependency_graph, perturbed_graph, read_signatures
    from sopgym.services.model.profiles import parse_profile

    domain = "banking/loans_graph"
    data = domain_data(domain)
    task = data.tasks[2]  # 45 distractors shown beside the 20 APIs
    signatures = read_signatures(task.inputs["apis"])
    assert signatures is not None
    right = dependency_graph(signatures)
    noisy, noisy_mistakes = perturbed_graph(right, parse_profile("noisy"), task.id)
    assert noisy["nodes"] == right["nodes"]  # edge mistakes only: nodes stay right
    assert not any(m["kind"] == "graph_wrong_node" for m in noisy_mistakes)
    answer, mistakes = perturbed_graph(right, parse_profile("wrong_nodes,seed=1"), task.id)
    wrong = [m for m in mistakes if m["kind"] == "graph_wrong_node"]
    assert wrong and all(m["got"] in answer["nodes"] for m in wrong)
    trajectory = Trajectory(task.id, "e", [], True, answer)
    metrics = _score(domain, 2, trajectory).scores["graph"]["metrics"]
    assert metrics["node_precision"] < 1.0 and metrics["node_recall"] < 1.0
    assert metrics["node_recall"] == pytest.approx(1 - len(wrong) / len(right["nodes"]))


def test_the_viewer_flags_the_tasks_judged_differently_and_shows_sopbenchs_headline(
    tmp_path: Path,
) -> None:
    import orjson
    from fastapi.testclient import TestClient

    from sopgym.viewer.app import create_app
    from sopgym.viewer.catalog import RunCatalog

    gold = domain_data(FLAGGING).gold[domain_data(FLAGGING).tasks[0].id].outputs
    title_case = {k.title(): v for k, v in gold.items()}
    scores = [
        _score(FLAGGING, 0, _answered(FLAGGING, 0, title_case)),  # SOP-Bench: correct
        _score(FLAGGING, 1, None),
    ]
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    config = {"domains": [FLAGGING], "agent": "fc", "model": "scripted", "seed": 0}
    (run / "config.json").write_bytes(orjson.dumps(config))
    rows: list[dict[str, Any]] = [
        {"task_id": s.task_id, "trial": 0, "domain": FLAGGING, "agent": "fc", "model": "scripted",
         "episode_id": f"e{i}", "status": "finished", "error": None, "elapsed_s": 0.1,
         "llm_calls": [], "inputs": {}, "outputs": None, "gold_outputs": gold,
         "score": s.to_json(), "trajectory": None}
        for i, s in enumerate(scores)
    ]  # fmt: skip
    (run / "results.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (run / "summary.json").write_bytes(orjson.dumps(summarize(scores)))
    page = TestClient(create_app(RunCatalog([tmp_path / "runs"]))).get("/runs/r").text
    assert page.count("class='badge paper'") == 1 and "sopbench: correct" in page
    assert "TSR, SOP-Bench&#x27;s def." in page and "50.0%" in page


@pytest.mark.parametrize(
    ("scenario", "catalog"),
    [("loans", 284), ("account_management", 274), ("credit_cards", 275), ("savings", 275),
     ("investments", 281)],
)  # fmt: skip
def test_the_whole_catalog_question_of_stage_1(scenario: str, catalog: int) -> None:
    import random

    from sopgym.domains.banking._engine.graph import WHOLE_CATALOG, shown_apis
    from sopgym.domains.banking._engine.spec import dependency_edges

    pack = load_domain(f"banking/{scenario}")
    rules = importlib.import_module(f"sopgym.domains.banking.{scenario}.scenario").SCENARIO
    apis = shown_apis(rules, WHOLE_CATALOG, random.Random(0))
    assert len(apis) == catalog == len(pack.tools) + len(pack.distractors)
    names = {tool.name for tool in pack.tools}
    edges = dependency_edges([(a["name"], tuple(a["inputs"]), tuple(a["outputs"])) for a in apis])
    scenario_edges = [e for e in edges if names.issuperset(e)]
    assert len(scenario_edges) == sum(len(needs) for needs in pack.dependencies.values())
    # no distractor links to the scenario's APIs, but back-office tools link among themselves
    assert not [e for e in edges if len(names.intersection(e)) == 1]
    assert len(edges) > len(scenario_edges)

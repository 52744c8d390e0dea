"""TELLER's two-stage view (Table 2) of banking runs: figures per scenario from scored
episodes, every task counted, infrastructure errors left out, and the table in the Markdown
report and the terminal summary."""

from __future__ import annotations

import copy
from typing import Any

from rich.console import Console

from sopgym.core.registry import load_domain
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.domains.banking._engine.spec import DECISIONS
from sopgym.evaluation import report
from sopgym.evaluation.evaluator import TaskSet, evaluate
from sopgym.evaluation.scoring import score_episode
from sopgym.evaluation.two_stage import two_stage
from sopgym.observability.otlp import SpanBatch
from tests.helpers import DATA_ROOT, domain_data

AGENT = "fc/scripted"
REFUSED = [
    CallRecord("request_loan_approval", {}, 422, "missing_argument", "level"),
    CallRecord("request_loan_approval", {"amount": "x"}, 422, "type_mismatch", "amount"),
]


def _row(domain: str, index: int, trajectory: Trajectory | None, infra: str | None = None) -> Any:
    data = domain_data(domain)
    task = data.tasks[index]
    gold = data.gold[task.id]
    score = score_episode(load_domain(domain), task, trajectory, gold, infra)
    return {"task_id": task.id, "domain": domain, "agent_model": AGENT, "score": vars(score)}


def _played(
    domain: str, index: int, outputs: Any = None, state: Any = None, refused: Any = ()
) -> Trajectory:
    """The gold calls made, after the ``refused`` ones; the answer and the final state the
    gold's unless given."""
    data = domain_data(domain)
    gold = data.gold[data.tasks[index].id]
    calls = [*refused, *(CallRecord(c.name, c.arguments, 200) for c in gold.calls)]
    return Trajectory(gold.task_id, "e", calls, True, outputs or gold.outputs,
                      final_state=state or gold.final_state)  # fmt: skip


def test_two_stage_view_per_scenario_counts_every_task() -> None:
    loans = "banking/loans"
    gold_1 = domain_data(loans).gold[domain_data(loans).tasks[1].id]
    assert gold_1.final_state is not None
    noted = copy.deepcopy(gold_1.final_state)
    noted["application"]["decision_note"] = "checked twice"  # harmless: the SOP never writes it
    other = next(d for d in DECISIONS if d != gold_1.outputs["decision"])
    wrong_decision = {**gold_1.outputs, "decision": other}
    gold_2 = domain_data(loans).gold[domain_data(loans).tasks[2].id]
    rows = [
        _row(loans, 0, _played(loans, 0)),
        _row(loans, 1, _played(loans, 1, wrong_decision, noted, REFUSED)),
        _row(loans, 2, Trajectory("t", "e", [], True, gold_2.outputs)),  # blank: no call made
        _row(loans, 3, None),  # no episode at all: fails everything
        _row(loans, 4, None, infra="model endpoint down"),  # not the agent's: left out
        _row("banking/loans_graph", 0, _graph_answer("banking/loans_graph", 0)),
        _row("banking/loans_graph", 1, None),
        _row("banking/savings_graph", 0, _graph_answer("banking/savings_graph", 0)),
        _row("patient_intake", 0, None),  # another family: not in the view
    ]
    found = two_stage(rows)
    assert found is not None and found["infra_errors"] == 1
    view = found["by_agent"][AGENT]
    assert list(view) == ["loans", "savings", "all"]
    stage_2 = view["loans"]["stage_2"]
    assert stage_2["tasks"] == 4
    assert stage_2["decision_accuracy"] == 2 / 4  # the gold answer and the blank one
    assert stage_2["final_state"] == 2 / 4 and stage_2["harmless_differences"] == 1
    assert 1 / 4 < stage_2["tool_f1"] < 2 / 4 and stage_2["tsr"] == 1 / 4
    assert (stage_2["blank"], stage_2["validation"], stage_2["type"]) == (1, 1, 1)
    stage_1 = view["loans"]["stage_1"]
    assert stage_1["tasks"] == 2 and stage_1["node_f1"] == stage_1["path_overlap"] == 0.5
    assert view["savings"]["stage_2"] is None and view["savings"]["stage_1"]["edge_f1"] == 1.0
    assert view["all"]["stage_1"]["tasks"] == 3 and view["all"]["stage_2"]["tasks"] == 4
    assert two_stage([rows[-1]]) is None


def _graph_answer(domain: str, index: int) -> Trajectory:
    data = domain_data(domain)
    gold = data.gold[data.tasks[index].id]
    return Trajectory(gold.task_id, "e", [], True, gold.outputs)


def test_the_view_is_in_the_report_and_the_terminal_summary() -> None:
    expected = [
        (d, domain_data(d).tasks[0].id, 0)
        for d in ("banking/credit_cards", "banking/credit_cards_graph")
    ]
    result = evaluate(SpanBatch(), TaskSet(DATA_ROOT), expected, ("r1", "fc"), source="run")
    view = result["two_stage"]["by_agent"]["fc/?"]["credit_cards"]
    assert view["stage_1"]["node_f1"] == 0.0 and view["stage_2"]["decision_accuracy"] == 0.0
    markdown = report.markdown(result)
    assert "## TELLER two-stage view (Table 2)" in markdown
    assert "| fc/? | credit_cards | 1 | 0.000 |" in markdown
    console = Console(record=True, width=200)
    report.print_summary(result, console)
    assert "decision acc." in console.export_text()
    untouched = evaluate(SpanBatch(), TaskSet(DATA_ROOT), [("patient_intake",
                         domain_data("patient_intake").tasks[0].id, 0)], ("r", "fc"))  # fmt: skip
    assert untouched["two_stage"] is None and "two-stage" not in report.markdown(untouched)

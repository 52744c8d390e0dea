"""tod/next_action: the gold covers every action and both no-action reasons, every third,
format and language; the scorers tell a wrong argument, a wrong first action and a
second-ranked section apart; the breakdown groups results by the paper's dimensions."""

from __future__ import annotations

from collections import Counter

from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.domains.tod.actions import TOOLS
from sopgym.domains.tod.report import breakdown, main
from sopgym.evaluation.scoring import score_episode
from tests.helpers import domain_data

NAME = "tod/next_action"


def test_gold_covers_actions_reasons_and_dimensions() -> None:
    data = domain_data(NAME)
    called = Counter(c.name for g in data.gold.values() for c in g.calls)
    assert set(called) == {t.name for t in TOOLS}
    reasons = {c.arguments["why"] for g in data.gold.values() for c in g.calls
               if c.name == "no_action"}  # fmt: skip
    assert reasons == {"awaiting_customer", "goal_met"}
    for dimension, values in (("position", 3), ("format", 3), ("language", 3)):
        assert len({t.inputs[dimension] for t in data.tasks}) == values
    assert len({t.inputs["conversation_id"] for t in data.tasks}) == 252
    assert all(t.inputs["conversation"][-1]["role"] == "user" for t in data.tasks)


def episode(task_id: str, calls: list[tuple[str, dict]], sections: list[str]) -> Trajectory:
    records = [CallRecord(name, args, 200) for name, args in calls]
    return Trajectory(task_id, "ep", records, True, {"sections": sections})


def test_scorers_tell_the_mistakes_apart() -> None:
    data = domain_data(NAME)
    task = next(t for t in data.tasks if len(data.gold[t.id].calls) >= 2)
    gold = data.gold[task.id]
    calls = [(c.name, dict(c.arguments)) for c in gold.calls]
    right, second = gold.outputs["sections"]
    perfect = score_episode(data.domain, task, episode(task.id, calls, [right, second]),
                            gold)  # fmt: skip
    assert perfect.scores["actions"]["value"] == 1.0
    wrong_arg = [(calls[0][0], {k: "AC-99999" if k == "account_id" else "OR-99999"
                                for k in calls[0][1]}), *calls[1:]]  # fmt: skip
    score = score_episode(data.domain, task, episode(task.id, wrong_arg, [second, right]), gold)
    assert not score.success
    assert score.scores["actions"]["value"] == 0.0
    assert score.scores["first_action"]["value"] == 0.0
    assert (score.scores["section_top1"]["value"], score.scores["section_top2"]["value"]) == (
        0.0, 1.0)
    short = score_episode(data.domain, task, episode(task.id, calls[:1], [right, second]), gold)
    assert short.scores["first_action"]["value"] == 1.0
    assert short.scores["actions"]["value"] == 0.0


def test_breakdown_by_third_format_and_language() -> None:
    data = domain_data(NAME)
    tasks = {t.id: t for t in data.tasks[::15]}
    rows = [{"task_id": t.id, "score": {"success": t.inputs["format"] == "nested",
                                        "scores": {"first_action": {"value": 1.0}}}}
            for t in tasks.values()]  # fmt: skip
    table = breakdown(tasks, rows)
    assert table["overall"]["all"]["tasks"] == len(tasks)
    assert table["format"]["nested"]["success"] == 1.0
    assert table["format"]["json"]["success"] == 0.0
    assert set(table["position"]) == {"beginning", "middle", "end"}
    assert table["language"]["en"]["first_action"] == 1.0
    assert table["language"]["en"]["section_top1"] is None


def test_the_report_command_refuses_a_folder_without_results(tmp_path, capsys) -> None:
    assert main([str(tmp_path)]) == 2
    assert "usage:" in capsys.readouterr().err

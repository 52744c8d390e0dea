"""tod/compliance: balanced labels, all three manipulations, and every label certain: a
violating response differs from the one sequence the procedure allows, a compliant one is it."""

from __future__ import annotations

from collections import Counter

from sopgym.domains.tod.compliance.generator import cases
from sopgym.domains.tod.compliance.manipulations import MANIPULATIONS, parameter
from sopgym.domains.tod.trees import Call
from tests.helpers import domain_data

NAME = "tod/compliance"


def test_labels_are_balanced_and_every_manipulation_is_used() -> None:
    data = domain_data(NAME)
    labels = Counter(g.outputs["label"] for g in data.gold.values())
    assert abs(labels["compliant"] - labels["violating"]) <= 1
    assert len(data.tasks) == 252  # one per conversation of the share
    made = Counter(c.manipulation for c in cases(data.domain.seed))
    assert all(made[kind] >= 15 for kind in MANIPULATIONS), made


def test_every_label_is_certain_by_construction() -> None:
    data = domain_data(NAME)
    for case, task in zip(cases(data.domain.seed), data.tasks, strict=True):
        response = [{"name": r["name"], "arguments": r["arguments"]}
                    for r in task.inputs["response"]]  # fmt: skip
        allowed = [c.to_json() for c in case.point.chain]
        assert (response == allowed) == (case.manipulation is None), task.id
        assert data.gold[task.id].outputs["label"] == (
            "compliant" if case.manipulation is None else "violating")
        if case.manipulation == "parameter":
            assert [r["name"] for r in response] == [c["name"] for c in allowed]


def test_a_parameter_change_keeps_the_actions_and_changes_one_argument() -> None:
    chain = [Call("pull_up_account", {"account_id": "AC-10001"}),
             Call("notify_team", {"account_id": "AC-10001", "team": "shipping"})]  # fmt: skip
    changed = parameter(chain)
    assert changed is not None
    assert changed[0] == chain[0]  # a read with another id would simply fail: not changed
    assert changed[1].action == "notify_team" and changed[1].arguments != chain[1].arguments
    assert parameter([Call("pull_up_account", {"account_id": "AC-10001"})]) is None

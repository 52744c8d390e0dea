"""ABCD import on our own fixtures in the real published shape (guidelines keyed by display
names, ontology ids by position, ``delexed`` targets, an FAQ subflow id absent from every
guideline, a subflow no guideline maps): TOD-ProcBench task 1 tasks after every customer turn,
labels an action or ``empty``, retrieval over all guidelines, only visible values, the oracle
at 1.0 through real processes with the paper's Overall and breakdowns, and bad input as one
clear line with nothing registered."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from sopgym.core.tasks import Gold
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.importers.abcd import (
    AbcdError,
    _visible,
    build_abcd,
    flow_key,
    names_agree,
    read_abcd,
)
from sopgym.viewer.app import create_app
from sopgym.viewer.catalog import RunCatalog

FIXTURES = Path(__file__).parent / "fixtures" / "abcd"
CONVERSATIONS = "abcd_sample.json"


def sopgym(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SOPGYM_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "sopgym", *args], capture_output=True,
                          text=True, timeout=300, env=env)  # fmt: skip


def test_a_task_after_every_customer_turn_labelled_action_or_empty() -> None:
    data = read_abcd(FIXTURES)
    records = json.loads((FIXTURES / CONVERSATIONS).read_text())
    mapped = [r for r in records if r["scenario"]["subflow"] != "teleport_9"]
    customer_turns = sum(1 for r in mapped for t in r["delexed"] if t["speaker"] == "customer")
    assert len(data.tasks) == customer_turns == 10
    assert all(t.task.inputs["conversation"][-1]["role"] == "user" for t in data.tasks)
    labels = {t.task.id: (t.action, t.values) for t in data.tasks}
    assert labels["abcd-9001-000"] == ("pull-up-account", [])  # the name is not said yet
    assert labels["abcd-9001-002"] == ("pull-up-account", ["nadia ortiz"])
    assert labels["abcd-9001-008"] == ("empty", [])  # no action left: the paper's empty
    assert labels["abcd-9002-005"] == ("verify-identity", ["tberg", "tom@berg.example", "tb4421"])
    # a delexed placeholder is never expected back
    refund = next(t for t in data.tasks if t.task.id == "abcd-9002-008")
    assert refund.values == [] and refund.decisions["hidden_values"] == ["<amount>"]
    # the conversation shown is the original text, never the delexed slots
    shown = " ".join(t["content"] for t in refund.task.inputs["conversation"])
    assert "tom berg" in shown and "<name>" not in shown


def test_guidelines_by_display_name_ids_by_position() -> None:
    data = read_abcd(FIXTURES)
    assert list(data.sections)[-1] == "Storewide Query / Timing"
    text = data.sections["Product Defect / Return Due to Size"]
    # the published shape: each action's subtext a list of steps, two instructions (an opening
    # and a wrap-up), typographic characters; lines of text, never a Python repr
    assert text.split("\n")[1:] == [
        "Take a return of an item that does not fit.",
        "- [Pull up Account] Pull up the account by full name.",
        "- [Verify Identity] Ask for username, email and order id.",
        "  - Username – the customer’s login",
        "  - Email address",
        "  - Order ID → enter it last",
        "- [Offer Refund] Offer a refund.",
        "  - Enter the amount “without” the dollar sign",
        "As always, end by asking whether the customer needs anything else.",
    ]
    assert "['" not in "".join(data.sections.values())
    # a subtext given as one string (not the published shape) stays on its action's line
    assert "- [Offer Refund] Offer a refund of the amount paid. (Enter the amount.)" in (
        data.sections["Product Defect / Initiate Refund"]
    )
    sections = {t.task.id.rsplit("-", 1)[0]: t.section for t in data.tasks}
    assert sections["abcd-9002"] == "Product Defect / Return Due to Size"
    assert sections["abcd-9003"] == "Storewide Query / Timing"  # timing_4 -> timing
    assert data.notes == ["subflow account_access/teleport_9: no guideline section maps to it; "
                          "1 conversation(s) left out"]  # fmt: skip
    assert names_agree("return_size", "Return Due to Size")
    assert names_agree("reset_2fa", "Reset Two-Factor Auth")
    assert not names_agree("recover_username", "Return Due to Size")
    # an FAQ answer is expected by its visible name, not its internal id
    faq = {"timing": "Storewide Query / Timing"}
    assert _visible(["timing_4"], [], faq) == (["Storewide Query / Timing"], [])


def test_flows_match_by_name_though_the_two_files_list_them_in_other_orders() -> None:
    """As in the published files, ontology.json lists its flows alphabetically and
    guidelines.json in another order: every flow maps to the one of its name (by position,
    none would)."""
    ontology = json.loads((FIXTURES / "ontology.json").read_text())
    guidelines = json.loads((FIXTURES / "guidelines.json").read_text())
    flows = ontology["intents"]["flows"]
    assert flows == sorted(flows) and [flow_key(n) for n in guidelines] != flows  # the shape
    data = read_abcd(FIXTURES)
    assert sorted({section.split(" / ")[0] for section in data.sections}) == sorted(guidelines)
    assert "Single-Item Query / Boots Other Info" in data.sections
    assert flow_key("Single-Item Query") == "single_item_query"
    assert names_agree("shopping_cart", "Cart Not Updating")
    assert names_agree("slow_speed", "Website Too Slow")


def test_an_import_that_maps_nothing_prints_what_did_not_map(tmp_path: Path) -> None:
    folder = tmp_path / "abcd"
    shutil.copytree(FIXTURES, folder)
    ontology = json.loads((folder / "ontology.json").read_text())
    ontology["intents"]["flows"] = ["account_acess", "product_defects", "storewide"]
    (folder / "ontology.json").write_text(json.dumps(ontology))
    result = sopgym(tmp_path / "home", "import", "abcd", str(folder))
    assert result.returncode == 2
    lines = result.stderr.rstrip().splitlines()
    assert lines[-1].startswith("error: ") and "no conversation maps" in lines[-1]
    assert "  not mapped: flow account_acess: guidelines.json has no flow of that name" in (
        lines[0])
    assert all(line.startswith("  not mapped: ") for line in lines[:-1])
    assert any("no guideline section maps to it" in line for line in lines)


def test_every_task_retrieves_among_all_guidelines() -> None:
    domain = build_abcd(FIXTURES)
    sop = domain.sop()  # what every episode is given, with the task's conversation
    assert sop.count("\n## ") == 7 and "## Storewide Query / Pricing\n" in sop  # 6 + actions
    assert "- empty" in sop and "- select-faq" in sop
    tasks = domain.generate(domain.seed, FIXTURES).tasks
    assert all(set(t.inputs) == {"convo_id", "conversation"} for t in tasks)  # small in cache
    assert not domain.reference_policy  # the scripted model plays the generic policy


def test_scores_tell_the_action_from_the_section_and_the_values() -> None:
    domain = build_abcd(FIXTURES)
    item = next(t for t in read_abcd(FIXTURES).tasks if t.task.id == "abcd-9002-005")
    gold = Gold(item.task.id, [], {}, {"action": item.action, "values": item.values,
                                       "sections": [item.section]})  # fmt: skip

    def scores(answer: dict) -> dict:
        run = Trajectory(item.task.id, "e", [], True, answer)
        found = score_episode(domain, item.task, run, gold)
        return {k: v["value"] for k, v in found.scores.items()} | {"success": found.success}

    right = scores(dict(gold.outputs))
    assert right["first_action"] == right["section_top1"] == right["values"] == 1.0
    second = scores({**gold.outputs, "sections": ["Product Defect / Initiate Refund",
                                                  item.section]})  # fmt: skip
    assert (second["section_top1"], second["section_top2"], second["success"]) == (0, 1, False)
    wrong = scores({**gold.outputs, "action": "offer-refund", "values": ["tberg"]})
    assert (wrong["first_action"], wrong["values"], wrong["success"]) == (0, 0, False)


def test_import_and_the_oracle_scores_one_with_the_papers_figures(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = sopgym(home, "import", "abcd", str(FIXTURES))
    assert result.returncode == 0, result.stderr
    assert "warning: subflow account_access/teleport_9" in result.stdout
    assert "imported abcd/next-action: 10 tasks" in result.stdout
    runs = tmp_path / "runs"
    result = sopgym(home, "run", "abcd", "--agent", "oracle", "--runs-dir", str(runs),
                    "--run-id", "o")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = orjson.loads((runs / "o" / "summary.json").read_bytes())
    assert (summary["tasks"], summary["tsr"]) == (10, 1.0)
    figures = summary["paper"]["tod_procbench"]
    assert figures["all"]["all"] == {"tasks": 10, "overall_k1": 1.0, "overall_k2": 1.0,
                                     "retrieval_k1": 1.0, "retrieval_k2": 1.0, "action": 1.0}
    assert set(figures["position"]) == {"beginning", "middle", "end"}
    assert set(figures["format"]) == {"abcd"} and set(figures["language"]) == {"en"}
    report = sopgym(home, "report", str(runs / "o"))
    assert report.returncode == 0, report.stderr[-3000:]
    text = (runs / "o" / "report.md").read_text()
    assert "TOD-ProcBench task 1, as the paper reports it" in text and "| position |" in text
    viewer = TestClient(create_app(RunCatalog([runs / "o"])))
    page = viewer.get("/runs/o")
    assert page.status_code == 200 and "TOD-ProcBench task 1, as the paper reports it" in page.text


def broken(tmp_path: Path, change: str) -> Path:
    folder = tmp_path / "abcd"
    shutil.copytree(FIXTURES, folder)
    data = json.loads((folder / CONVERSATIONS).read_text())
    turns = data[0]["delexed"]
    if change == "missing":
        (folder / "kb.json").unlink()
    elif change == "unknown_action":
        turns[3]["targets"][2] = "teleport-parcel"
    elif change == "malformed_turn":
        turns[2]["targets"] = ["recover_password", "take_action"]
    elif change == "gzipped":
        raw = (folder / CONVERSATIONS).read_bytes()
        (folder / CONVERSATIONS).unlink()
        (folder / f"{CONVERSATIONS}.gz").write_bytes(gzip.compress(raw))
        return folder
    elif change == "splits":
        data = {"train": data[:2], "dev": data[2:], "test": []}
    (folder / CONVERSATIONS).write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize(("change", "says"), [
    ("missing", "missing kb.json"),
    ("unknown_action", "unknown action 'teleport-parcel'"),
    ("malformed_turn", "turn 2: a turn needs text and targets"),
])  # fmt: skip
def test_bad_input_is_one_line_and_nothing_is_registered(tmp_path: Path, change: str,
                                                         says: str) -> None:  # fmt: skip
    home = tmp_path / "home"
    result = sopgym(home, "import", "abcd", str(broken(tmp_path, change)))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("error: "), lines
    assert not (home / "imports.json").exists()
    with pytest.raises(AbcdError):
        read_abcd(tmp_path / "abcd")


@pytest.mark.parametrize("change", ["gzipped", "splits"])
def test_the_full_release_shapes_read_the_same(tmp_path: Path, change: str) -> None:
    assert len(read_abcd(broken(tmp_path, change)).tasks) == 10

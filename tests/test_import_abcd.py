"""ABCD import: the fixtures (our own, in ABCD's published shape) import as next-action
tasks, the oracle scores 100% through real processes, top-1 action and value accuracy are
scored apart, and bad input is one clear line with nothing registered."""

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

from sopgym.core.tasks import Gold
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.importers.abcd import AbcdError, build_abcd, read_abcd

FIXTURES = Path(__file__).parent / "fixtures" / "abcd"


def sopgym(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SOPGYM_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "sopgym", *args], capture_output=True,
                          text=True, timeout=300, env=env)  # fmt: skip


def test_every_action_turn_becomes_a_task() -> None:
    tasks, actions = read_abcd(FIXTURES)
    assert [t.action for t in tasks] == ["pull-up-account", "make-password", "pull-up-account",
                                         "verify-identity", "search-faq", "pull-up-account",
                                         "shipping-status"]  # fmt: skip
    assert tasks[3].values == ["tb4421", "tberg", "tom@berg.example"]
    assert "make-password" in actions
    # the conversation before the action (with earlier actions), and the subflow's guideline
    assert [t["role"] for t in tasks[1].task.inputs["conversation"]] == [
        "user", "agent", "user", "action", "agent", "user"]
    assert "[Make Password]" in tasks[1].task.inputs["guideline"]


def test_scores_tell_the_action_from_the_values() -> None:
    domain = build_abcd(FIXTURES)
    tasks, _ = read_abcd(FIXTURES)
    item = tasks[3]
    gold = Gold(item.task.id, [], {}, {"action": item.action, "values": item.values})
    answer = {"action": item.action, "values": ["tb4421"]}
    score = score_episode(domain, item.task, Trajectory(item.task.id, "e", [], True, answer),
                          gold)  # fmt: skip
    assert (score.scores["action"]["value"], score.scores["values"]["value"]) == (1.0, 0.0)
    assert not score.success


def test_import_and_the_oracle_scores_every_fixture_task(tmp_path: Path) -> None:
    result = sopgym(tmp_path / "home", "import", "abcd", str(FIXTURES))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("imported abcd/next-action: 7 tasks")
    result = sopgym(tmp_path / "home", "run", "abcd/next-action", "--agent", "oracle",
                    "--runs-dir", str(tmp_path / "runs"), "--run-id", "o",
                    "--no-trace")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = orjson.loads((tmp_path / "runs" / "o" / "summary.json").read_bytes())
    assert (summary["tasks"], summary["tsr"]) == (7, 1.0)
    assert summary["scores"]["action"] == summary["scores"]["values"] == 1.0


def broken(tmp_path: Path, change: str) -> Path:
    folder = tmp_path / "abcd"
    shutil.copytree(FIXTURES, folder)
    data = json.loads((folder / "abcd_fixture.json").read_text())
    turns = data["train"][0]["delexed"]
    if change == "missing":
        (folder / "kb.json").unlink()
    elif change == "unknown_action":
        turns[3]["targets"][2] = "teleport-parcel"
    elif change == "malformed_turn":
        turns[2]["targets"] = ["recover_password", "take_action"]
    elif change == "gzipped":
        raw = (folder / "abcd_fixture.json").read_bytes()
        (folder / "abcd_fixture.json").unlink()
        (folder / "abcd_fixture.json.gz").write_bytes(gzip.compress(raw))
        return folder
    (folder / "abcd_fixture.json").write_text(json.dumps(data))
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


def test_the_gzipped_release_reads_the_same(tmp_path: Path) -> None:
    tasks, _ = read_abcd(broken(tmp_path, "gzipped"))
    assert len(tasks) == 7

"""SOP-Maze's published raw-data folder as it really is (our own content, the real shape):
CJK / emoji / full-width-bracket file names, five of which reduce to the same ASCII slug,
scenarios named by the paper's table, shapes from that table, BFS/DFS or "unknown",
scorability decided by what the scorer compares, and the imported family selectable and
listed like a shipped one."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sopgym.cli import main
from sopgym.core.dataset import derive_gold
from sopgym.core.registry import select_domains
from sopgym.core.tables import Tables
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.importers.cli import audit_group, import_group
from sopgym.importers.maze_names import SCENARIOS, domain_name, scenario_of, shape_of
from sopgym.importers.resolve import load_imported, run_refusal
from tests.sopbench_helpers import isolated_home

RAW = Path(__file__).parent / "fixtures" / "sopmaze" / "raw_data"
NAMES = {
    "sopmaze/h1_food_combo_business_development": "HRS",
    "sopmaze/h4_customer_evaluation_follow_up": "HRS",
    "sopmaze/h9_restaurant_business_development": "HRS",
    "sopmaze/h10_bulk_order_clarification": "HRS",
    "sopmaze/l8_app_guide": "LRS",
    "sopmaze/l13_named_entity_classification": "LRS",
    "sopmaze/dfs_b91c04d0": "HRS",  # not a published scenario: DFS in the name
    "sopmaze/v1_20_54a177e7": "unknown",  # neither: kept, shape unknown
}


def _slug_only(path: Path) -> str:
    return re.sub(r"[^a-z0-9]+", "_", re.sub(r"\s*\d+$", "", path.stem).lower()).strip("_")


def test_real_file_names_get_unique_stable_readable_names() -> None:
    files = sorted(RAW.glob("*.json"))
    assert all(not f.name.isascii() for f in files)  # CJK, emoji, full-width brackets
    same = [f for f in files if _slug_only(f) == "v1_20"]
    assert len(same) == 5  # five names whose ASCII alone is the same fragment
    names = {domain_name(f) for f in files}
    assert names == set(NAMES) and len(names) == len(files)
    assert {domain_name(f): shape_of(f) for f in files} == NAMES
    # every fragment of the paper's table names exactly its scenario (v1/v2 twins apart)
    for scenario in SCENARIOS:
        assert scenario_of(Path(f"📌 {scenario.fragment}（x） 12.json")) == scenario
    assert scenario_of(Path("麻子烧烤电话接待员Ｖ２ 20.json")).index == "H2"  # full-width
    # an unrecognised name keeps a digest of the whole name: two such names never meet
    assert domain_name(Path("未知甲（v1-20）2.json")) != domain_name(Path("未知乙（v1-20）2.json"))


def test_import_is_idempotent_and_never_overwrites_another_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolated_home(tmp_path, monkeypatch)
    first = CliRunner().invoke(import_group, ["sop-maze", str(RAW)])
    assert first.exit_code == 0, first.output
    assert "imported sopmaze/h10_bulk_order_clarification: 2 items, HRS (1 unscorable" in (
        first.output
    )
    assert "sopmaze/v1_20_54a177e7: 2 items, unknown" in first.output
    registry = (home / "imports.json").read_text()
    assert set(json.loads(registry)["imports"]) == set(NAMES)
    again = CliRunner().invoke(import_group, ["sop-maze", str(RAW)])
    assert again.exit_code == 0 and (home / "imports.json").read_text() == registry
    # another copy of the H1 file elsewhere: refused, not silently replacing the first
    other = tmp_path / "copy"
    other.mkdir()
    shutil.copy(next(RAW.glob("*神抢手*")), other / "神抢手 v9 3.json")
    refused = CliRunner().invoke(import_group, ["sop-maze", str(other)])
    assert refused.exit_code == 2 and "already" in refused.output and "--replace" in refused.output
    assert (home / "imports.json").read_text() == registry
    replaced = CliRunner().invoke(import_group, ["sop-maze", str(other), "--replace"])
    assert replaced.exit_code == 0, replaced.output
    # two files of one folder naming one scenario: refused whole
    shutil.copy(next(RAW.glob("*神抢手*")), other / "神抢手 v8 3.json")
    both = CliRunner().invoke(import_group, ["sop-maze", str(other)])
    assert both.exit_code == 2 and "both name sopmaze/h1_" in both.output


def test_shape_override_and_bad_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)
    given = CliRunner().invoke(
        import_group, ["sop-maze", str(RAW), "--shape", "v1_20_54a177e7=LRS"]
    )
    assert given.exit_code == 0 and "sopmaze/v1_20_54a177e7: 2 items, LRS" in given.output
    domain = load_imported("sopmaze/v1_20_54a177e7")
    task = domain.generate(domain.seed, RAW).tasks[0]
    assert derive_gold(domain, Tables({}), RAW, task).decisions["shape"] == "LRS"
    bad = CliRunner().invoke(import_group, ["sop-maze", str(RAW), "--shape", "x.json=WIDE"])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1


def test_the_oracle_answer_scores_one_on_every_scorable_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    CliRunner().invoke(import_group, ["sop-maze", str(RAW)])
    grades: dict[str, float | None] = {}
    for name in NAMES:
        domain = load_imported(name)
        assert run_refusal("oracle", [domain]) is None  # answer-only: the oracle may run
        for task in domain.generate(domain.seed, RAW).tasks:
            gold = derive_gold(domain, Tables({}), RAW, task)
            run = Trajectory(task.id, "e", [], True, gold.outputs)
            grades[task.id] = score_episode(domain, task, run, gold).scores["answer_schema"][
                "value"
            ]
    unscorable = [t for t, g in grades.items() if g is None]
    assert unscorable == ["h10_bulk_order_clarification-0001"]
    assert {g for g in grades.values() if g is not None} == {1.0} and len(grades) == 17
    # the mended items are scored, and the published target itself breaks the schema there
    domain = load_imported("sopmaze/h1_food_combo_business_development")
    gold = derive_gold(domain, Tables({}), RAW, domain.generate(domain.seed, RAW).tasks[1])
    assert gold.decisions["mended"] == ["$.step"] and gold.outputs["step"] == "2.2"


def test_audit_reports_per_file_in_sop_mazes_terms(tmp_path: Path) -> None:
    out = tmp_path / "audit"
    result = CliRunner().invoke(audit_group, ["sop-maze", str(RAW), "--out", str(out)])
    assert result.exit_code == 0, result.output
    reports = sorted(p.stem for p in out.glob("*.json") if p.stem != "summary")
    assert reports == sorted(n.split("/")[1] for n in NAMES)  # none overwrote another
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["items"], summary["scorable"]) == (17, 16)
    h1 = (out / "h1_food_combo_business_development.md").read_text()
    assert "record 1: invalid only at $.step" in h1 and "H1" in h1
    h10 = (out / "h10_bulk_order_clarification.md").read_text()
    assert "record 1: target invalid in a compared key" in h10


def test_imported_families_are_listed_and_selected_like_shipped_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    CliRunner().invoke(import_group, ["sop-maze", str(RAW)])
    assert select_domains(["sopmaze"]) == sorted(NAMES)
    assert select_domains(["sopmaze/*"]) == sorted(NAMES)
    assert select_domains(["sopmaze/h1_*"]) == ["sopmaze/h1_food_combo_business_development"]
    monkeypatch.setenv("COLUMNS", "300")
    listed = CliRunner().invoke(main, ["list", "--data-root", str(tmp_path / "data")])
    assert listed.exit_code == 0, listed.output
    for name, shape in NAMES.items():
        line = next(line for line in listed.output.splitlines() if name in line)
        assert f"shape {shape}" in line

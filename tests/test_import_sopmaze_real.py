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
from sopgym.cli.imports import audit_group, import_group
from sopgym.core.dataset import derive_gold
from sopgym.core.errors import UnknownDomainError
from sopgym.core.registry import select_domains
from sopgym.core.tables import Tables
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.importers.maze_names import SCENARIOS, domain_name, scenario_of, shape_of
from sopgym.importers.resolve import load_imported, run_refusal
from tests.sopbench_helpers import isolated_home

RAW = Path(__file__).parent / "fixtures" / "sopmaze" / "raw_data"
NAMES = {
    "sopmaze/h1_food_combo_business_development": "HRS",
    "sopmaze/h4_customer_evaluation_follow_up": "HRS",
    "sopmaze/h9_restaurant_business_development": "HRS",
    "sopmaze/h10_bulk_order_clarification": "HRS",
    "sopmaze/l3_flow_line_track": "LRS",
    "sopmaze/l6_intention_recognition_analysis": "LRS",
    "sopmaze/l7_optimal_traffic_delivery_schedule": "LRS",
    "sopmaze/l8_app_guide": "LRS",  # no BFS in its name: the paper's table says LRS
    "sopmaze/l13_named_entity_classification": "LRS",
    "sopmaze/dfs_481d587e": "HRS",  # not a published scenario: DFS in the name
    "sopmaze/7cbec017": "unknown",  # neither: kept, shape unknown
}
UNKNOWN = "sopmaze/7cbec017"


def _slug_only(path: Path) -> str:
    return re.sub(r"[^a-z0-9]+", "_", re.sub(r"\s*\d+$", "", path.stem).lower()).strip("_")


def test_real_file_names_get_unique_stable_readable_names() -> None:
    files = sorted(RAW.glob("*.json"))
    assert all(not f.name.isascii() for f in files)  # CJK, emoji, full-width brackets
    same = [f for f in files if _slug_only(f) == ""]
    assert len(same) == 5  # five names with no ASCII but their record count
    assert all(f.name.startswith("熟_【已清洗】👋") for f in files)  # the published style
    names = {domain_name(f) for f in files}
    assert names == set(NAMES) and len(names) == len(files)
    assert {domain_name(f): shape_of(f) for f in files} == NAMES
    # every fragment of the paper's table names exactly its scenario (v1/v2 twins apart)
    for scenario in SCENARIOS:
        assert scenario_of(Path(f"📌 {scenario.fragment}（x） 12.json")) == scenario
    found = scenario_of(Path("麻子烧烤电话接待员Ｖ２ 20.json"))  # full-width forms
    assert found is not None and found.index == "H2"
    # an unrecognised name keeps a digest of the whole name: two such names never meet
    assert domain_name(Path("未知甲（v1-20）2.json")) != domain_name(Path("未知乙（v1-20）2.json"))
    assert domain_name(Path("熟_【已清洗】👋✅ 麻子烧烤电话接待员v1-20.json")).endswith("_v1")


def test_import_is_idempotent_and_never_overwrites_another_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolated_home(tmp_path, monkeypatch)
    first = CliRunner().invoke(import_group, ["sop-maze", str(RAW)])
    assert first.exit_code == 0, first.output
    assert "imported sopmaze/h10_bulk_order_clarification: 2 items, HRS (1 unscorable" in (
        first.output
    )
    assert f"{UNKNOWN}: 2 items, unknown" in first.output
    registry = (home / "imports.json").read_text()
    assert set(json.loads(registry)["imports"]) == set(NAMES)
    again = CliRunner().invoke(import_group, ["sop-maze", str(RAW)])
    assert again.exit_code == 0 and (home / "imports.json").read_text() == registry
    # another copy of the H1 file elsewhere: refused, not silently replacing the first
    other = tmp_path / "copy"
    other.mkdir()
    shutil.copy(next(RAW.glob("*神抢手*")), other / "熟_【已清洗】👋✅ DFS神抢手套餐招商3.json")
    refused = CliRunner().invoke(import_group, ["sop-maze", str(other)])
    assert refused.exit_code == 2 and "already" in refused.output and "--replace" in refused.output
    assert (home / "imports.json").read_text() == registry
    replaced = CliRunner().invoke(import_group, ["sop-maze", str(other), "--replace"])
    assert replaced.exit_code == 0, replaced.output
    # one folder holding a scenario twice (data_with_model_response/ has two L3 files): each
    # keeps a digest of its file name, and each loads under its own name
    twice = tmp_path / "twice"
    shutil.copytree(RAW, twice)
    shutil.copy(next(RAW.glob("*动线机器人*")), twice / "熟_【已清洗】👋✅动线机器人2.json")
    both = CliRunner().invoke(import_group, ["sop-maze", str(twice), "--replace"])
    assert both.exit_code == 0 and "warning: 2 files name sopmaze/l3_flow_line_track" in both.output
    names = [n for n in json.loads((home / "imports.json").read_text())["imports"] if "l3_" in n]
    assert len(names) == 3  # the first import's, and the two of this folder
    for name in names:
        assert load_imported(name).name == name


def test_shape_override_and_bad_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)
    given = CliRunner().invoke(
        import_group, ["sop-maze", str(RAW), "--shape", "7cbec017=LRS"]
    )
    assert given.exit_code == 0 and f"{UNKNOWN}: 2 items, LRS" in given.output
    domain = load_imported(UNKNOWN)
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
    assert {g for g in grades.values() if g is not None} == {1.0} and len(grades) == 23
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
    assert (summary["items"], summary["scorable"]) == (23, 22)
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
        line = next(line for line in listed.output.splitlines()
                    if name in line and not line.startswith("generating"))  # fmt: skip
        assert f"shape {shape}" in line


def test_every_imported_family_is_selected_by_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    fixtures = Path(__file__).parent / "fixtures"
    assert CliRunner().invoke(import_group, ["sop-bench", str(fixtures / "sop_bench" / "clean")]
                              ).exit_code == 0  # fmt: skip
    assert CliRunner().invoke(import_group, ["abcd", str(fixtures / "abcd")]).exit_code == 0
    assert select_domains(["sopbench"]) == ["sopbench/clean"]
    assert select_domains(["abcd"]) == ["abcd/next-action"]
    assert select_domains(["sopbench", "abcd/*"]) == ["sopbench/clean", "abcd/next-action"]
    assert "sopbench/clean" not in select_domains(["all"])  # all: the registered packs


def test_an_imported_family_with_nothing_imported_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    with pytest.raises(UnknownDomainError, match="no sopmaze benchmark is imported"):
        select_domains(["sopmaze"])

"""Importing registers folders by path; names resolve in every process; scoring stays honest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from sopgym.cli.imports import import_group
from sopgym.client import GatewayClient
from sopgym.core.registry import UnknownDomainError
from sopgym.core.tasks import Gold, Task
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import aggregate, score_episode
from sopgym.importers.resolve import load_imported
from sopgym.orchestration.stack import embedded_stack
from sopgym.services.tools.app import create_app
from tests.scoring_helpers import pack
from tests.sopbench_helpers import FIXTURES, copy_fixture, isolated_home


def _import(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(import_group, ["sop-bench", *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_import_registers_paths_without_copying(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolated_home(tmp_path, monkeypatch)
    code, output = _import(str(FIXTURES))
    assert code == 0, output
    assert "imported sopbench/clean: 5 tasks, 2 tools" in output
    uncallable = output.split("imported sopbench/uncallable_tools")[1].splitlines()[1]
    assert uncallable == (
        "  warning: tools.py cannot call escalateToManager (calls to them will fail and count "
        "as tool_error)"
    )
    for broken in ("bad_json", "bad_csv", "missing_columns"):
        assert f"skipped {broken}: " in output  # reported, and the others still imported
    # no input_columns and no inputs-only test set: inferred from the tool specs, and shown
    assert "imported sopbench/missing_input_columns: 5 tasks" in output
    registry = json.loads((home / "imports.json").read_text())["imports"]
    assert registry["sopbench/clean"] == {
        "path": str(FIXTURES / "clean"), "input_columns": None, "strict_schemas": False,
        "none_as_error": False,
    }  # fmt: skip
    assert "sopbench/bad_json" not in registry
    assert sorted(p.name for p in home.iterdir()) == ["imports.json"]  # nothing copied


def test_input_columns_nothing_names_are_refused_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    # no input_columns, no inputs-only test set, and no tool argument names a column
    copy = copy_fixture("missing_input_columns", tmp_path / "copies")
    specs = json.loads((copy / "toolspecs.json").read_text())
    for entry in specs:
        schema = entry["toolSpec"]["inputSchema"]["json"]
        schema["properties"] = {f"{k}Ref": v for k, v in schema["properties"].items()}
        schema["required"] = [f"{k}Ref" for k in schema["required"]]
    (copy / "toolspecs.json").write_text(json.dumps(specs))
    code, output = _import(str(copy))
    assert code == 1 and "names no input_columns" in output and "--input-columns" in output
    folder = str(FIXTURES / "missing_input_columns")
    code, output = _import(folder, "--input-columns", "order_id,refund_decision")
    assert code == 1 and "also output columns: refund_decision" in output
    code, output = _import(folder, "--input-columns", "order_id, customer_tier")
    assert code == 0, output
    domain = load_imported("sopbench/missing_input_columns")
    task = domain.generate(domain.seed, Path())
    assert task.tasks[0].inputs == {"order_id": "A-100", "customer_tier": "standard"}


def test_unknown_and_vanished_benchmarks_fail_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    with pytest.raises(UnknownDomainError, match="sopbench/nope is not imported"):
        load_imported("sopbench/nope")
    folder = copy_fixture("clean", tmp_path / "copies")
    assert _import(str(folder))[0] == 0
    (folder / "toolspecs.json").write_text("[")
    with pytest.raises(UnknownDomainError, match=r"clean: toolspecs\.json: invalid JSON"):
        load_imported("sopbench/clean")
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    with pytest.raises(UnknownDomainError, match="no longer exists; import it again"):
        load_imported("sopbench/clean")


def test_the_standard_tool_service_serves_an_imported_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    for name in ("clean", "uncallable_tools", "tools_returning_none"):
        assert _import(str(FIXTURES / name))[0] == 0
    client = TestClient(create_app(load_imported("sopbench/clean"), tmp_path / "data"))
    catalog = client.get("/v1/tools").json()
    assert [t["name"] for t in catalog["tools"]] == ["getOrderDetails", "checkReturnWindow"]
    assert catalog["sop"]["clean"].startswith("Standard Operating Procedure")
    assert list(catalog["output_schema"]["properties"]) == ["refund_decision"]

    def call(client: TestClient, tool: str, body: dict) -> tuple[int, dict]:
        response = client.post(f"/v1/tools/{tool}", json=body)
        return response.status_code, response.json()

    assert call(client, "getOrderDetails", {"order_id": "A-100"}) == (
        200,
        {"result": {"item condition": "new", "days since purchase": 10}},
    )
    status, body = call(client, "getOrderDetails", {"order_id": "Z-9"})
    assert (status, body["error"]["code"]) == (404, "not_found")
    status, body = call(client, "getOrderDetails", {})
    assert (status, body["error"]["field"]) == (422, "order_id")
    status, body = call(client, "getOrderDetails", {"order_id": "A-100", "extra": 1})
    assert (status, body["error"]["code"]) == (422, "unexpected_argument")

    broken = TestClient(create_app(load_imported("sopbench/uncallable_tools"), tmp_path / "d"))
    status, body = call(broken, "escalateToManager", {"order_id": "A-100"})
    assert status == 500 and "tools.py lacks it" in body["error"]["message"]
    none = TestClient(create_app(load_imported("sopbench/tools_returning_none"), tmp_path / "d"))
    args = {"order_id": "A-104", "customer_tier": "gold", "days_since_purchase": 70}
    status, body = call(none, "checkReturnWindow", args)  # as SOP-Bench: a successful null
    assert status == 200 and body["result"] == {"value": None}
    assert "returned None" in body["warnings"][0]
    assert _import(str(FIXTURES / "tools_returning_none"), "--none-as-error")[0] == 0
    strict = TestClient(create_app(load_imported("sopbench/tools_returning_none"), tmp_path / "d"))
    status, body = call(strict, "checkReturnWindow", args)  # our strict view: the tool failed
    assert status == 500 and "returned None" in body["error"]["message"]


def test_calls_breaking_the_published_schema_reach_the_tools_unless_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    assert _import(str(FIXTURES / "schema_mismatches"))[0] == 0
    # toolspecs.json types days_since_purchase as a string; the data (and the tool) use ints
    args = {"order_id": "A-100", "customer_tier": "standard", "days_since_purchase": 10}
    lenient = TestClient(create_app(load_imported("sopbench/schema_mismatches"), tmp_path / "d"))
    answer = lenient.post("/v1/tools/checkReturnWindow", json=args)
    assert answer.status_code == 200, answer.text
    (warning,) = answer.json()["warnings"]
    assert "schema disagreement (days_since_purchase): type_mismatch" in warning
    assert answer.json()["result"]["within_window"] is True
    assert _import("--strict-schemas", str(FIXTURES / "schema_mismatches"))[0] == 0
    strict = TestClient(create_app(load_imported("sopbench/schema_mismatches"), tmp_path / "d"))
    refused = strict.post("/v1/tools/checkReturnWindow", json=args)
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "type_mismatch")
    assert lenient.post("/v1/tools/checkReturnWindow", content=b"[1]").status_code == 400


def test_the_gateway_records_the_warning_of_a_passed_through_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)  # in the environment: the stack's processes read it
    assert _import(str(FIXTURES / "schema_mismatches"))[0] == 0
    name = "sopbench/schema_mismatches"
    args = {"order_id": "A-100", "customer_tier": "standard", "days_since_purchase": 10}
    with embedded_stack([name], tmp_path / "logs", tmp_path / "data") as stack:
        client = GatewayClient(stack.gateway_url)
        episode = client.open("sopbench-schema_mismatches-000", name)
        assert episode.call("checkReturnWindow", args).ok
        (call,) = client.record(episode.id, stack.admin_token)["calls"]
        client.close()
    assert call["status"] == 200 and call["warnings"][0].startswith("schema disagreement")


def test_tool_metrics_are_not_applicable_without_reference_calls() -> None:
    gold = Gold(
        "t", calls=[], decisions={}, outputs={"refund_decision": "full"}, reference_calls=False
    )
    trajectory = Trajectory("t", "ep", finished=True, outputs={"refund_decision": "Full "})
    domain, task = pack({}), Task("t", "sopbench/x", {})
    score = score_episode(domain, task, trajectory, gold)
    assert score.success and score.tool_f1 is None and score.gold_calls is None
    assert score.domain == "sopbench/x" and score.scores["tool_calls"]["value"] is None
    missing = score_episode(domain, task, None, gold)
    assert not missing.completed and missing.tool_precision is None
    summary = aggregate([score, missing])
    assert (summary["tsr"], summary["ecr"], summary["tool_f1"]) == (0.5, 0.5, None)
    assert Gold.from_json(gold.to_json()).reference_calls is False

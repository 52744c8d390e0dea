"""Why a task failed, from its result row (sopgym.evaluation.explain), and the user mistakes
a run refuses up front (one line, exit 2) instead of scoring them.

The rows are scored by the real scorers (banking's final state, the TOD action sequence);
the refusals go through the real command line, the model ones against a real HTTP server
on loopback that answers as an OpenAI-compatible server does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sopgym.cli import main as cli
from sopgym.core.tasks import Gold, ToolCall
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.explain import (
    align_actions,
    aligned_actions,
    because_line,
    call_differences,
    coverage_line,
    failed_because,
    failed_in_all_trials,
    field_verdicts,
    state_differences,
)
from sopgym.evaluation.scorers import Case
from sopgym.evaluation.scorers.answers import final_state
from sopgym.evaluation.scorers.calls import tool_calls
from tests.helpers import DATA_ROOT, domain_data


def _case(calls: list[CallRecord], gold_calls: list[ToolCall], state: Any, gold_state: Any) -> Case:
    from sopgym.core.registry import load_domain

    gold = Gold("t-1", gold_calls, {}, {"decision": "approve"}, final_state=gold_state)
    trajectory = Trajectory("t-1", "ep-1", calls=calls, finished=True,
                            outputs={"decision": "approve"}, final_state=state)  # fmt: skip
    return Case(None, trajectory, gold, load_domain("banking/loans"))  # type: ignore[arg-type]


def _row(case: Case, scores: dict[str, Any], success: bool) -> dict[str, Any]:
    return {
        "task_id": "t-1", "domain": "banking/loans", "trial": 0, "status": "finished",
        "outputs": {"decision": "approve"}, "gold_outputs": {"decision": "approve"},
        "trajectory": case.trajectory.to_json(),
        "score": {"completed": True, "success": success, "fields": {"decision": True},
                  "scores": {k: v.to_json() for k, v in scores.items()}, "infra_error": None},
    }  # fmt: skip


def test_a_state_failure_names_the_write_never_made_and_the_values_side_by_side() -> None:
    write = ToolCall("update_loan_application", {"application_id": "LN-1", "status": "approved"})
    read = ToolCall("get_loan_application", {"application_id": "LN-1"})
    made = [
        CallRecord("get_loan_application", {"application_id": "LN-1"}, 200),
        CallRecord("assess_collateral", {"application_id": "LN-1"}, 422, "missing_argument"),
    ]
    case = _case(made, [read, write], {"application": {"status": "pending"}},
                 {"application": {"status": "approved"}})  # fmt: skip
    scores = {"final_state": final_state()(case), "tool_calls": tool_calls()(case)}
    row = _row(case, scores, success=False)

    # the gold write never made; the refused call, as the trajectory recorded it
    assert call_differences(row) == ([write.to_json()], [made[1].to_json()])
    assert state_differences(row) == [("$.application.status", "approved", "pending")]
    [reason] = failed_because(row)
    assert reason.scorer == "final_state"
    assert reason.text.startswith("gold call(s) not made: update_loan_application")
    assert '$.application.status expected "approved", got "pending"' in reason.text
    # every field matched: the answer is not what failed, and no line says it did
    assert "wrong answer" not in because_line(row)


def test_a_success_has_no_reason_and_a_perfect_episode_no_missing_call() -> None:
    read = ToolCall("get_loan_application", {"application_id": "LN-1"})
    made = [CallRecord("get_loan_application", {"application_id": "LN-1"}, 200)]
    case = _case(made, [read], {"a": 1}, {"a": 1})
    row = _row(case, {"final_state": final_state()(case), "tool_calls": tool_calls()(case)}, True)
    assert failed_because(row) == [] and because_line(row) == "-"
    assert call_differences(row) == ([], [])


def test_tod_actions_are_aligned_step_by_step() -> None:
    from sopgym.domains.tod.scoring import actions

    gold = [ToolCall("pull_up_account", {"account_id": "AC-1"}),
            ToolCall("issue_store_credit", {"order_id": "OR-1"})]  # fmt: skip
    made = [CallRecord("pull_up_account", {"account_id": "AC-1"}, 200),
            CallRecord("issue_store_credit", {}, 422, "missing_argument"),
            CallRecord("issue_store_credit", {"order_id": "OR-1"}, 200),
            CallRecord("notify_manager", {"account_id": "AC-1"}, 200)]  # fmt: skip
    trajectory = Trajectory("t", "e", calls=made, finished=True, outputs={})
    scored = actions()(Case(None, trajectory, Gold("t", gold, {}, {}), None))  # type: ignore[arg-type]
    assert scored.value == 0.0
    # one line, no Python repr of the two lists
    assert scored.explanation.endswith("step 2: extra issue_store_credit() (+1 more difference)")
    aligned = align_actions(scored.metrics["made"], scored.metrics["gold"])
    assert [kind for kind, _, _ in aligned] == ["same", "extra", "same", "extra"]


def test_a_field_another_scorer_judges_is_not_called_unscored() -> None:
    row = {
        "gold_outputs": {"sections": ["refund"], "note": "x"},
        "outputs": {"sections": ["exchange"], "note": "y"},
        "score": {"fields": {}, "scores": {
            "section_top1": {"value": 0.0, "gates": True, "explanation": "refund not in top 1"},
            "section_top2": {"value": 1.0, "gates": False, "explanation": ""}}},
    }  # fmt: skip
    assert field_verdicts(row) == {"sections": "wrong (section_top1)", "note": "not scored"}


def test_coverage_says_what_the_headline_tsr_covers() -> None:
    summary = {"tasks": 100, "scored": 1, "infra_errors": 99, "correct": 1, "tsr": 1.0}
    assert coverage_line(summary) == (
        "TSR 100.0% over 1 of 100 planned; 99 infra errors; TSR over all planned 1.0%"
    )
    assert coverage_line({"tasks": 5, "scored": 5, "infra_errors": 0, "tsr": 0.4}) is None


def test_failed_in_all_trials_leaves_out_single_trials_and_infra_errors() -> None:
    def row(task: str, success: bool, infra: str | None = None) -> dict[str, Any]:
        return {"domain": "d", "task_id": task, "score": {"success": success, "infra_error": infra}}

    rows = [row("a", False), row("a", False), row("b", False), row("b", True), row("c", False),
            row("d", False), row("d", False, "gateway down")]  # fmt: skip
    assert failed_in_all_trials(rows) == {("d", "a")}


# ---- mistakes refused up front ----
class _OpenAIStub(ThreadingHTTPServer):
    """An OpenAI-compatible server at /v1 serving one model, ``real-model``: an unknown
    model is a 404 with OpenAI's error shape, any other path a plain 404."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _StubHandler)


class _StubHandler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "real-model", "object": "model"}]})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path != "/v1/chat/completions":
            self._send(404, {"detail": "Not Found"})
        else:
            message = f"The model `{body['model']}` does not exist."
            self._send(404, {"error": {"message": message, "type": "NotFoundError"}})


@pytest.fixture(scope="module")
def stub() -> Iterator[str]:
    server = _OpenAIStub()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _refused(tmp: Path, *args: str) -> str:
    """``sopgym run`` with ``args``: it must exit 2 with one line, having made no run."""
    domain_data("patient_intake")
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", "patient_intake", "--runs-dir", str(tmp),
         "--run-id", "r", "--data-root", str(DATA_ROOT), *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert not (tmp / "r").exists()
    return lines[0]


def test_a_base_url_without_v1_is_refused(stub: str, tmp_path: Path) -> None:
    line = _refused(tmp_path, "--agent", "fc", "--model", "openai:real-model", "--base-url", stub)
    assert "is --base-url the API root?" in line and f"try {stub}/v1" in line


def test_a_model_the_server_does_not_serve_is_refused(stub: str, tmp_path: Path) -> None:
    line = _refused(tmp_path, "--agent", "fc", "--model", "openai:no-such-model",
                    "--base-url", stub + "/v1")  # fmt: skip
    assert "refused model 'no-such-model'" in line and "it serves: real-model" in line
    assert "does not exist" in line


def test_faults_naming_a_tool_the_run_lacks_are_refused(tmp_path: Path) -> None:
    domain_data("patient_intake")
    result = CliRunner().invoke(
        cli, ["run", "patient_intake", "--faults", "lookup_patients:503=0.5", "--runs-dir",
              str(tmp_path), "--data-root", str(DATA_ROOT)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--faults names 'lookup_patients', which no domain of this run" in result.output
    assert "validate_insurance" in result.output  # the tools it could have named
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["report", "eval", "compare"])
def test_a_run_id_that_is_no_run_is_one_line(command: str, tmp_path: Path) -> None:
    args = [command, "nope", *(["nope"] if command == "compare" else []), "--runs-dir",
            str(tmp_path)]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert f"no run 'nope' (neither {tmp_path / 'nope'} nor nope exists)" in result.output


def test_a_step_line_prints_off_a_terminal_only_when_slow() -> None:
    from sopgym.orchestration.after_run import SLOW_STEP_S, slow_step

    assert not slow_step("step task=t-1 n=3 purpose=act latency=0.01s in=4100 out=13")
    assert slow_step(f"step task=t-1 n=3 purpose=act latency={SLOW_STEP_S + 2.5}s in=1 out=1")


@pytest.mark.slow
def test_quiet_prints_the_figures_and_no_line_per_task(tmp_path: Path) -> None:
    domain_data("patient_intake")
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", "patient_intake", "--limit", "2", "--quiet",
         "--runs-dir", str(tmp_path), "--run-id", "q", "--data-root", str(DATA_ROOT),
         "--no-trace"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "done task=" not in result.stderr and "step task=" not in result.stderr
    assert "patient_intake" in result.stdout and "TSR" in result.stdout
    assert "next: sopgym view q --runs-dir" in result.stderr


def test_the_run_summary_in_the_terminal_says_the_coverage(capsys: pytest.CaptureFixture) -> None:
    from sopgym.cli.summary import print_summary

    figures = {"tasks": 100, "scored": 1, "infra_errors": 99, "completed": 1, "correct": 1,
               "ecr": 1.0, "c_tsr": 1.0, "tsr": 1.0, "tool_f1": 1.0, "errors": {}}  # fmt: skip
    print_summary({**figures, "domains": {"patient_intake": figures}})
    out = " ".join(capsys.readouterr().out.split())
    assert "coverage: TSR 100.0% over 1 of 100 planned; 99 infra errors" in out
    assert "TSR over all planned 1.0%" in out


def test_task_inputs_show_text_as_text_and_turns_as_turns() -> None:
    from sopgym.viewer.why import inputs

    html = inputs({"sop": 'Step 1: ask.\nStep 2: say "done".', "steps": 3,
                   "dialogue": [{"role": "customer", "time": "15:45", "text": "Hi"}]})  # fmt: skip
    assert "<pre class='text'>Step 1: ask.\nStep 2: say &quot;done&quot;.</pre>" in html
    assert "\\n" not in html  # no JSON string of escaped lines
    assert "<span class='role'>customer</span><pre>Hi</pre>" in html
    assert "<pre class='json'>3</pre>" in html


def test_the_right_tool_with_wrong_arguments_is_a_missing_and_an_extra_call() -> None:
    """Tool F1 counts tool names: a call of the gold's tool with other arguments scores 1.0
    there, and must still show as the gold call not made and a call beyond the gold."""
    wanted = ToolCall("get_loan_application", {"application_id": "LN-1"})
    made = [CallRecord("get_loan_application", {"application_id": "LN-2"}, 200)]
    case = _case(made, [wanted], {"a": 1}, {"a": 1})
    scored = tool_calls()(case)
    assert scored.value == 1.0
    row = _row(case, {"tool_calls": scored, "final_state": final_state()(case)}, True)
    assert call_differences(row) == ([wanted.to_json()], [made[0].to_json()])


def test_an_extra_tod_action_the_service_refused_says_so() -> None:
    """The actions scorer keeps names and arguments only: the reason and the aligned diff
    add the refusal from the trajectory, so a refused extra call does not read as one that
    ran."""
    made = [{"name": "pull_up_account", "arguments": {"account_id": 8}},
            {"name": "pull_up_account", "arguments": {"account_id": "AC-1"}}]  # fmt: skip
    gold = [made[1]]
    calls = [{**made[0], "status": 422, "error_code": "type_mismatch"},
             {**made[1], "status": 200, "error_code": None}]  # fmt: skip
    row = {
        "task_id": "t", "domain": "tod/live", "trajectory": {"calls": calls},
        "score": {"completed": True, "success": False, "scores": {"actions": {
            "value": 0.0, "gates": True, "metrics": {"made": made, "gold": gold}}}},
    }  # fmt: skip
    assert "extra pull_up_account(account_id=8) → type_mismatch (refused 422)" in (
        because_line(row)
    )
    aligned = aligned_actions(row)
    assert aligned is not None and aligned[0][0] == "extra"
    assert aligned[0][2] is not None and aligned[0][2]["status"] == 422

"""Infrastructure errors and injected faults in scoring, the fault spec, corrupt rows, and the
CLI's checks of ports, timeouts and run names (no servers: the process tests are in
test_infra_faults.py)."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from sopgym.agents.models import parse_model_spec
from sopgym.cli import main as cli
from sopgym.client import REFUSED_RETRIES, GatewayClient, InfraError
from sopgym.core.jsonio import CorruptRow, read_jsonl_prefix
from sopgym.core.trajectory import CallRecord
from sopgym.evaluation.scoring import score_episode, summarize
from sopgym.gateway.faults import FaultSpecError, parse_faults
from sopgym.orchestration.liveness import EndpointWatch
from tests.test_scoring import GOLD, PACK, task, trajectory

ANSWER = {"decision": "approve", "amount": 12.5}


def played(*calls: CallRecord):
    return score_episode(PACK, task("tool_use"), trajectory(list(calls), ANSWER), GOLD)


def test_a_dead_service_is_an_infra_error_not_a_success() -> None:
    """The answer is right and both gold tools were named, but one call never reached its
    tool: before, that scored a success with recall 1.0."""
    result = played(
        CallRecord("a", {"x": 1}, 200),
        CallRecord("b", {"y": "z"}, 503, error_code="service_unavailable"),
    )
    assert not result.success and not result.completed
    assert result.infra_error == "b: service_unavailable"
    assert result.errors == {} and result.tool_recall is None


def test_a_scored_state_its_service_could_not_hand_over_is_an_infra_error() -> None:
    """The service holding the episode's state died before the gateway's close: the state is
    unknown, so the state scorer must not fail the agent for it."""
    calls = [CallRecord("a", {"x": 1}, 200), CallRecord("b", {"y": "z"}, 200)]
    lost = replace(trajectory(calls, ANSWER), state_error="service_unavailable: down")
    stateful = replace(GOLD, final_state={"balance": 3})
    result = score_episode(PACK, task("tool_use"), lost, stateful)
    assert not result.success
    assert result.infra_error == "final state lost: service_unavailable: down"
    # where no state is scored, a close that failed after the answer changes nothing
    assert score_episode(PACK, task("tool_use"), lost, GOLD).success


def test_retried_faults_are_no_agent_calls() -> None:
    result = played(
        CallRecord("a", {"x": 1}, 429, error_code="rate_limited"),
        CallRecord("a", {"x": 1}, 200),
        CallRecord("b", {"y": "z"}, 502, error_code="connection_dropped"),
        CallRecord("b", {"y": "z"}, 200),
    )
    assert result.success and result.infra_error is None
    assert (result.faults, result.calls, result.tool_precision) == (2, 2, 1.0)


def test_metrics_leave_infra_errors_out_and_split_tsr_by_faults() -> None:
    clean = played(CallRecord("a", {"x": 1}, 200), CallRecord("b", {"y": "z"}, 200))
    faulted = score_episode(PACK, task("tool_use"), trajectory([
        CallRecord("a", {"x": 1}, 503, error_code="temporarily_unavailable"),
        CallRecord("a", {"x": 1}, 200),
    ], {**ANSWER, "decision": "deny"}), GOLD)  # a wrong answer: a failure the agent owns
    infra = score_episode(PACK, task("tool_use"), None, GOLD, infra_error="agent worker exited")
    summary = summarize([clean, faulted, infra])
    assert (summary["tasks"], summary["scored"], summary["infra_errors"]) == (3, 2, 1)
    assert summary["ecr"] == 1.0 and summary["tsr"] == 0.5
    assert "incomplete" not in summary["errors"]  # the worker's death is no agent error
    assert summary["robustness"] == {
        "faults_injected": 1,
        "episodes_with_faults": 1,
        "tsr_with_faults": 0.0,
        "tsr_without_faults": 1.0,
    }


def test_fault_draws_are_seeded_per_call_and_tool_rules_override() -> None:
    plan = parse_faults("503=0.5,latency=exp:20ms,lookup:drop=1")
    draws = [plan.draw(7, "t-1", 0, i, "get") for i in range(200)]
    assert draws == [plan.draw(7, "t-1", 0, i, "get") for i in range(200)]
    assert draws != [plan.draw(8, "t-1", 0, i, "get") for i in range(200)]
    codes = {d.code for d in draws}
    assert codes == {None, "temporarily_unavailable"}
    assert 70 < sum(d.code is not None for d in draws) < 130
    assert all(d.delay >= 0 for d in draws) and len({d.delay for d in draws}) > 100
    assert plan.draw(7, "t-1", 0, 0, "lookup").code == "connection_dropped"
    uniform = parse_faults("latency=uniform:10ms..20ms").draw(1, "t", 0, 0, "x").delay
    assert 0.01 <= uniform <= 0.02


@pytest.mark.parametrize("spec", [
    "503", "503=1.5", "503=nan", "404=0.1", "429=0.6,503=0.6", "latency=fast",
    "latency=uniform:5ms", "latency=uniform:9ms..2ms", "bad tool:503=0.1",
])  # fmt: skip
def test_bad_fault_specs_are_refused(spec: str) -> None:
    with pytest.raises(FaultSpecError):
        parse_faults(spec)


def test_a_corrupt_row_is_named_and_can_be_dropped(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"a": 1}\n[2]\n{"a": 3}\n{"a"')
    with pytest.raises(CorruptRow, match=r"results.jsonl, line 2: corrupt row"):
        read_jsonl_prefix(path)
    assert read_jsonl_prefix(path, repair=True, drop_corrupt=True) == [{"a": 1}, {"a": 3}]
    assert path.read_bytes() == b'{"a": 1}\n{"a": 3}\n'


@pytest.mark.parametrize("args", [
    ["run", "--task-timeout", "-5"],
    ["run", "--task-timeout", "nan"],
    ["run", "--task-timeout", "inf"],
    ["run", "--run-id", "../x"],
    ["run", "--run-id", "/tmp/x"],
    ["run", "--resume", ".."],
    ["run", "--retry-infra"],
    ["run", "--faults", "503=2"],
    ["serve-tools", "ledger", "--port", "70000"],
    ["gateway", "--port", "70000", "--local-domain", "triage"],
    ["gateway", "--grpc-port", "0", "--local-domain", "triage"],
    ["model-server", "--port", "-1"],
    ["user-sim", "--port", "65536"],
    ["collector", "--port", "70000", "--out", "x"],
    ["agent-worker", "--gateway", "http://127.0.0.1:9", "--metrics-port", "70000"],
    ["agent-worker", "--gateway", "http://127.0.0.1:9", "--task-timeout", "0"],
])  # fmt: skip
def test_cli_refuses_bad_values_in_one_line(args: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [*args, *(["--runs-dir", str(tmp_path)] if args[0] == "run"
                                               else [])])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "Error" in result.output


def test_a_runs_folder_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    """A runs folder under a file fails with an OSError even for root (a read-only folder
    does not, for root)."""
    (tmp_path / "file").write_text("")
    runs = tmp_path / "file" / "runs"
    result = CliRunner().invoke(cli, ["run", "ledger", "--runs-dir", str(runs), "--no-trace"])
    assert result.exit_code == 2, result.output
    assert "cannot use run folder" in result.output and "Traceback" not in result.output


def test_a_gateway_refusing_connections_is_an_infra_error_after_one_retry() -> None:
    """Nothing listens (the gateway died): one retry, not the whole backoff budget (~3 s)."""
    client = GatewayClient(closed_port_url(), retries=4, backoff=0.2)
    started = time.monotonic()
    with pytest.raises(InfraError, match="unreachable"):
        client.open("ledger-000", "ledger")
    assert time.monotonic() - started < 0.2 * 2**REFUSED_RETRIES
    client.close()


def test_the_watch_names_a_dead_endpoint_and_probes_the_model_only_for_its_failures() -> None:
    class Healthy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    gateway = ThreadingHTTPServer(("127.0.0.1", 0), Healthy)
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    up = f"http://127.0.0.1:{gateway.server_address[1]}"
    dead = closed_port_url()
    model = parse_model_spec("scripted", f"{dead}/v1")
    try:
        assert EndpointWatch(up, model).check("InfraError: ... service_unavailable") is None
        cause = "ModelUnreachable: scripted: Connection error."
        assert EndpointWatch(up, model).check(cause) is None  # untyped: no model probe
        down = EndpointWatch(up, model).check(cause, "ModelUnreachable")
        assert down is not None and down.startswith("the model endpoint is down (scripted:")
    finally:
        gateway.shutdown()
        gateway.server_close()
    down = EndpointWatch(dead, model).check("InfraError: gateway unreachable")
    assert down is not None and down.startswith(f"the gateway is down ({dead}/healthz")


def closed_port_url() -> str:
    """The URL of a loopback port nothing listens on."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    return f"http://127.0.0.1:{port}"


def test_an_unreadable_episode_record_names_the_gateway_as_the_worker_does() -> None:
    """The gateway died between the worker's report and the runner's read of the record: the
    row's cause reads like the worker's own gateway failures (``InfraError: gateway ...``), and
    a cause the worker already gave is kept."""
    from sopgym.orchestration.runner import record_unreadable
    from sopgym.runs.records import WorkerReport

    dead = InfraError("gateway http://127.0.0.1:1 unreachable: [Errno 111] Connection refused")
    played = WorkerReport(task_id="t1", status="completed", error=None, episode_id="e1")
    assert record_unreadable(played, dead).startswith("InfraError: gateway http://127.0.0.1:1")
    cause = "InfraError: POST /v1/tools: 503"
    failed = WorkerReport(task_id="t1", status="infra_error", error=cause, episode_id="e1")
    assert record_unreadable(failed, dead) == cause

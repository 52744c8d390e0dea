"""gRPC and HTTP parity: one gateway process serves both transports from one core, so the same
calls give the same results, the same error codes (and fields, and HTTP-equivalent statuses),
the same call records and the same traces."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import orjson
import pytest
from google.rpc import error_details_pb2, status_pb2

from sopgym.client import GatewayClient, connect
from sopgym.client.over_grpc import GrpcGatewayClient, trailing_metadata
from sopgym.evaluation.sources import load_spans
from sopgym.gateway.grpc_server import GRPC_STATUS
from sopgym.orchestration.stack import Stack, embedded_stack
from sopgym.proto import gateway_v1
from tests.helpers import DATA_ROOT, task_id

DOMAIN = "patient_intake"
TOOL = "score_lifestyle"
GOOD = {"patient_id": "P100000000", "smoking_status": "Former",
        "alcohol_consumption": "Moderate", "exercise_frequency": "1-2 times"}  # fmt: skip
# (arguments, expected error code or None): the same calls go over both transports
CALLS: list[tuple[str, Any, str | None]] = [
    (TOOL, GOOD, None),
    (TOOL, {"patient_id": "P100000000"}, "missing_argument"),
    (TOOL, {**GOOD, "shoe_size": 44}, "unexpected_argument"),
    (TOOL, {**GOOD, "smoking_status": 7}, "type_mismatch"),
    (TOOL, {**GOOD, "smoking_status": "Sometimes"}, "invalid_value"),
    (TOOL, {**GOOD, "patient_id": "P999999999"}, None),  # the tool decides: result or not_found
    ("no_such_tool", {}, "unknown_tool"),
    (TOOL, "{not json", "invalid_json"),
    (TOOL, [1, 2], "invalid_request"),
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("grpc")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
        with embedded_stack([DOMAIN], root / "logs", DATA_ROOT, traces=root / "traces",
                            grpc=True) as running:  # fmt: skip
            yield running


def grpc_target(stack: Stack) -> str:
    assert stack.grpc_target is not None  # the stack was started with grpc=True
    return stack.grpc_target


@pytest.fixture(scope="module")
def http(stack: Stack) -> Iterator[GatewayClient]:
    client = GatewayClient(stack.gateway_url, retries=0)
    yield client
    client.close()


@pytest.fixture(scope="module")
def rpc(stack: Stack) -> Iterator[GrpcGatewayClient]:
    client = GrpcGatewayClient(grpc_target(stack), retries=0)
    yield client
    client.close()


def http_call(stack: Stack, episode: Any, name: str, arguments: Any) -> tuple[int, dict]:
    content = arguments.encode() if isinstance(arguments, str) else orjson.dumps(arguments)
    response = httpx.post(
        f"{stack.gateway_url}/v1/episodes/{episode.id}/tools/{name}",
        content=content,
        headers={"authorization": f"Bearer {episode.token}"},
    )
    return response.status_code, response.json()


def grpc_call(rpc: GrpcGatewayClient, episode: Any, name: str, arguments: Any) -> Any:
    data = arguments.encode() if isinstance(arguments, str) else orjson.dumps(arguments)
    request = rpc.pb2.CallToolRequest(episode_id=episode.id, tool=name, arguments_json=data)
    try:
        return rpc.invoke("CallTool", request, episode.token)
    except grpc.RpcError as error:
        return error


def error_of(body: dict) -> tuple[str, str | None]:
    """The refusal's code and field (every caller expects a refusal)."""
    error = body["error"]
    return error["code"], error["field"]


def test_catalog_and_tasks_are_the_same(stack: Stack, http: GatewayClient,
                                        rpc: GrpcGatewayClient) -> None:  # fmt: skip
    assert rpc.catalog() == httpx.get(f"{stack.gateway_url}/v1/catalog").json()
    assert rpc.tasks(DOMAIN) == http.tasks(DOMAIN)
    tasks = http.tasks(DOMAIN)
    assert tasks and all(set(t) == {"id", "domain", "inputs", "kind", "conversation"}
                         for t in tasks)  # fmt: skip - inputs only, never gold


def test_open_gives_the_same_episode_view(http: GatewayClient, rpc: GrpcGatewayClient) -> None:
    a = http.open(task_id(DOMAIN, 0), DOMAIN, distractors=2, sop_variant="noisy")
    b = rpc.open(task_id(DOMAIN, 0), DOMAIN, distractors=2, sop_variant="noisy")
    assert (a.sop, a.input_schema, a.output_schema, a.tools) == (
        b.sop, b.input_schema, b.output_schema, b.tools
    )  # fmt: skip
    assert a.id != b.id


@pytest.mark.parametrize("name,arguments,code", CALLS, ids=[f"{c[0]}-{c[2]}" for c in CALLS])
def test_tool_calls_give_the_same_results_and_error_codes(
    stack: Stack, http: GatewayClient, rpc: GrpcGatewayClient, name: str, arguments: Any,
    code: str | None,
) -> None:  # fmt: skip
    over_http = http.open(task_id(DOMAIN, 1), DOMAIN)
    over_grpc = rpc.open(task_id(DOMAIN, 1), DOMAIN)
    status, body = http_call(stack, over_http, name, arguments)
    reply = grpc_call(rpc, over_grpc, name, arguments)
    if code is not None:
        assert error_of(body)[0] == code
    if isinstance(reply, grpc.RpcError):
        trailers = trailing_metadata(reply)
        assert status >= 400, f"HTTP {status} {body} but gRPC {reply.code()}"
        assert (trailers["sopgym-error-code"], trailers["sopgym-error-field"] or None) == (
            error_of(body)
        )
        assert int(trailers["sopgym-http-status"]) == status
        assert reply.code() == GRPC_STATUS[error_of(body)[0]]
        assert reply.details() == body["error"]["message"]
        rich = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
        info = error_details_pb2.ErrorInfo()
        assert rich.details[0].Unpack(info) and info.reason == body["error"]["code"]
        assert info.metadata["http_status"] == str(status)
    else:
        assert status == reply.http_status == 200
        assert orjson.loads(reply.result_json) == body["result"]
    # the agent-facing clients agree too: same ToolResult over both transports
    if not isinstance(arguments, str):
        a, b = over_http.call(name, arguments), over_grpc.call(name, arguments)
        assert (a.status, a.body) == (b.status, b.body)
    # and the gateway recorded the same calls
    ra, rb = (http.record(e.id, e.token)["calls"] for e in (over_http, over_grpc))
    strip = [{k: v for k, v in c.items() if k != "duration_ms"} for c in ra]
    assert strip == [{k: v for k, v in c.items() if k != "duration_ms"} for c in rb]


def test_episode_refusals_map_to_the_same_codes(stack: Stack, rpc: GrpcGatewayClient) -> None:
    pb2 = rpc.pb2
    base = stack.gateway_url
    mine = rpc.open(task_id(DOMAIN, 2), DOMAIN)
    other = rpc.open(task_id(DOMAIN, 3), DOMAIN)
    cases = [
        # (HTTP request, gRPC method, request, token)
        (("POST", "/v1/episodes", {"domain": "nope", "task_id": "x"}, None),
         "OpenEpisode", pb2.OpenEpisodeRequest(domain="nope", task_id="x"), None),
        (("POST", "/v1/episodes", {"domain": DOMAIN}, None),
         "OpenEpisode", pb2.OpenEpisodeRequest(domain=DOMAIN), None),
        (("POST", "/v1/episodes", {"domain": DOMAIN, "task_id": "x", "distractors": -1}, None),
         "OpenEpisode", pb2.OpenEpisodeRequest(domain=DOMAIN, task_id="x", distractors=-1), None),
        (("POST", "/v1/episodes", {"domain": DOMAIN, "task_id": "x", "sop_variant": "v9"}, None),
         "OpenEpisode", pb2.OpenEpisodeRequest(domain=DOMAIN, task_id="x", sop_variant="v9"),
         None),
        (("POST", f"/v1/episodes/{mine.id}/tools/{TOOL}", GOOD, None),
         "CallTool", pb2.CallToolRequest(episode_id=mine.id, tool=TOOL), None),
        (("POST", f"/v1/episodes/{mine.id}/tools/{TOOL}", GOOD, other.token),
         "CallTool", pb2.CallToolRequest(episode_id=mine.id, tool=TOOL), other.token),
        (("POST", f"/v1/episodes/ep-nope/tools/{TOOL}", GOOD, mine.token),
         "CallTool", pb2.CallToolRequest(episode_id="ep-nope", tool=TOOL), mine.token),
        (("GET", f"/v1/episodes/{mine.id}", None, other.token),
         "GetEpisode", pb2.GetEpisodeRequest(episode_id=mine.id), other.token),
        (("POST", f"/v1/episodes/{mine.id}/finish", {"outputs": 5}, mine.token),
         "FinishEpisode",
         pb2.FinishEpisodeRequest(episode_id=mine.id, outputs_json=b"5"), mine.token),
        (("GET", "/v1/tasks?domain=nope", None, None),
         "ListTasks", pb2.ListTasksRequest(domain="nope"), None),
    ]  # fmt: skip
    for (method, path, payload, token), rpc_method, request, rpc_token in cases:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        response = httpx.request(method, base + path, json=payload, headers=headers)
        with pytest.raises(grpc.RpcError) as raised:
            rpc.invoke(rpc_method, request, rpc_token)
        trailers = trailing_metadata(raised.value)
        expected = error_of(response.json())
        assert (trailers["sopgym-error-code"], trailers["sopgym-error-field"] or None) == (
            expected
        ), f"{method} {path}"
        assert int(trailers["sopgym-http-status"]) == response.status_code
        assert raised.value.code() == GRPC_STATUS[expected[0]]


def test_finished_episodes_are_closed_on_both_transports(
    stack: Stack, http: GatewayClient, rpc: GrpcGatewayClient
) -> None:
    episode = rpc.open(task_id(DOMAIN, 4), DOMAIN)
    episode.call(TOOL, GOOD)
    episode.finish({"registration_status": "x"})
    assert http.record(episode.id, episode.token)["finished"] is True
    again = rpc.pb2.FinishEpisodeRequest(episode_id=episode.id, outputs_json=b"{}")
    with pytest.raises(grpc.RpcError) as raised:
        rpc.invoke("FinishEpisode", again, episode.token)
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert trailing_metadata(raised.value)["sopgym-error-code"] == "episode_closed"
    late = http_call(stack, episode, TOOL, GOOD)
    assert late[0] == 409 and error_of(late[1])[0] == "episode_closed"
    assert grpc_call(rpc, episode, TOOL, GOOD).code() == grpc.StatusCode.FAILED_PRECONDITION


def test_one_core_serves_both_transports(stack: Stack, http: GatewayClient,
                                         rpc: GrpcGatewayClient) -> None:  # fmt: skip
    opened = http.open(task_id(DOMAIN, 5), DOMAIN)
    reply = grpc_call(rpc, opened, TOOL, GOOD)
    assert reply.http_status == 200
    record = rpc.record(opened.id, stack.admin_token)  # the admin token works over gRPC too
    assert [c["name"] for c in record["calls"]] == [TOOL]
    metrics = httpx.get(f"{stack.gateway_url}/metrics").text
    series = 'tool_calls_total{domain="patient_intake",outcome="ok",transport="grpc"}'
    assert series in metrics
    assert 'transport="http"' in metrics


def test_trace_context_travels_in_grpc_metadata(stack: Stack, rpc: GrpcGatewayClient) -> None:
    episode = rpc.open(task_id(DOMAIN, 6), DOMAIN)
    trace_id, parent = "ab" * 16, "cd" * 8
    _, stubs = gateway_v1()
    stub = stubs.GatewayStub(grpc.insecure_channel(grpc_target(stack)))
    request = rpc.pb2.CallToolRequest(
        episode_id=episode.id, tool=TOOL, arguments_json=orjson.dumps({"patient_id": "P1"})
    )
    metadata = (("authorization", f"Bearer {episode.token}"),
                ("traceparent", f"00-{trace_id}-{parent}-01"))  # fmt: skip
    with pytest.raises(grpc.RpcError):
        stub.CallTool(request, metadata=metadata)
    deadline = time.monotonic() + 30
    span, spans = None, []
    while (span is None or len(spans) < 2) and time.monotonic() < deadline:
        time.sleep(0.3)
        spans = [s for s in load_spans(Path(stack.logs).parent / "traces").spans
                 if s.trace_id == trace_id]  # fmt: skip
        span = next((s for s in spans if s.name == "sopgym.gateway.v1.Gateway/CallTool"), None)
    assert span is not None, "the gateway's span joined the caller's trace"
    assert span.parent_id == parent
    assert any(s.parent_id == span.span_id for s in spans), "and the tool service's below it"
    attributes = span.attributes
    assert attributes["rpc.system"] == "grpc"
    assert attributes["sopgym.gateway.op"] == "call"
    assert attributes["sopgym.call.error.code"] == "missing_argument"
    assert attributes["http.response.status_code"] == 422  # what the evaluator scores


def test_connect_picks_the_transport(stack: Stack) -> None:
    assert isinstance(connect(stack.gateway_url), GatewayClient)
    client = connect(f"grpc://{stack.grpc_target}", "grpc")
    assert isinstance(client, GrpcGatewayClient) and client.tasks(DOMAIN)
    client.close()
    with pytest.raises(ValueError):
        connect(stack.gateway_url, "carrier-pigeon")


def test_a_run_over_grpc_scores_like_one_over_http(tmp_path: Path) -> None:
    """``sopgym run --transport grpc``: the workers reach the gateway over gRPC (its spans say
    so) and the oracle still scores 100%."""
    command = [sys.executable, "-m", "sopgym", "run", DOMAIN, "--agent", "oracle", "--limit",
               "4", "--transport", "grpc", "--runs-dir", str(tmp_path), "--run-id", "g",
               "--data-root", str(DATA_ROOT)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads((tmp_path / "g" / "summary.json").read_bytes())
    assert summary["tasks"] == 4 and summary["tsr"] == 1.0
    names = {s.name for s in load_spans(tmp_path / "g" / "traces").spans}
    assert "sopgym.gateway.v1.Gateway/CallTool" in names
    assert not any(n.startswith("POST /v1/episodes/{episode_id}/tools") for n in names)

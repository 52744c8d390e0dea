"""The gateway's MCP door, with the official MCP SDK's client against real processes; and the
parity of the three transports: the same oracle episodes over HTTP, gRPC and MCP give the same
records, the same trace-rebuilt trajectories and the same scores."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from sopgym.agents.mcp_agent import McpAgent
from sopgym.agents.oracle import OracleAgent, replay_of
from sopgym.agents.worker import run_job
from sopgym.client import GatewayClient, connect
from sopgym.client.over_mcp import HANDSHAKE, STATELESS, McpGatewayClient
from sopgym.client.transports import transport as named_transport
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.episodes import assemble
from sopgym.evaluation.scoring import score_episode
from sopgym.evaluation.sources import load_spans
from sopgym.gateway.mcp_server import FINISH_TOOL, OPEN_TOOL, SOP_URI, TASK_PROMPT, TASK_URI
from sopgym.observability import semconv as sc
from sopgym.observability import tracing
from sopgym.orchestration.stack import Stack, embedded_stack
from tests.helpers import DATA_ROOT, domain_data, task_id
from tests.test_grpc import CALLS, DOMAIN, GOOD, TOOL

# the MCP door twice: the handshake revision 2025-11-25 and the stateless 2026-07-28
# "mcp": the default client, MCP's current revision (stateless); the handshake one kept beside
TRANSPORTS = ("http", "grpc", "mcp", f"mcp-{HANDSHAKE}")
PARITY_TASKS = 3
UNSUPPORTED_VERSION = -32022  # JSON-RPC error of MCP 2026-07-28: a version the server lacks


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("mcp")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
        with embedded_stack([DOMAIN], root / "logs", DATA_ROOT, traces=root / "traces",
                            grpc=True) as running:  # fmt: skip
            yield running


@pytest.fixture(scope="module")
def http(stack: Stack) -> Iterator[GatewayClient]:
    client = GatewayClient(stack.gateway_url, retries=0)
    yield client
    client.close()


@pytest.fixture(scope="module")
def door(stack: Stack) -> Iterator[McpGatewayClient]:
    client = McpGatewayClient(stack.gateway_url, retries=0)
    yield client
    client.close()


def first_task(http: GatewayClient) -> str:
    return str(http.tasks(DOMAIN)[0]["id"])


# ---- the official SDK's client, as any MCP host would use it ----
async def sdk_episode(url: str, outputs: dict[str, Any]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with Client(url, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        seen["tools"] = {t.name: t for t in tools}
        seen["prompt"] = (await client.get_prompt(TASK_PROMPT)).messages[0].content
        seen["sop"] = (await client.read_resource(SOP_URI)).contents[0]
        seen["task"] = (await client.read_resource(TASK_URI)).contents[0]
        seen["good"] = await client.call_tool(TOOL, GOOD)
        seen["refused"] = await client.call_tool(TOOL, {"patient_id": "P100000000"})
        seen["finished"] = await client.call_tool(FINISH_TOOL, outputs)
        seen["late"] = await client.call_tool(TOOL, GOOD)
        with pytest.raises(MCPError) as raised:
            await client.read_resource("sopgym://episode/nothing")
        seen["protocol_error"] = raised.value
        seen["after"] = await client.list_tools()  # the session outlives the error
    return seen


def test_an_sdk_client_works_an_episode(stack: Stack, http: GatewayClient,
                                        door: McpGatewayClient) -> None:  # fmt: skip
    task_id = first_task(http)
    gold = domain_data(DOMAIN).gold[task_id]
    url = door.task_url(task_id, DOMAIN, distractors=2)
    seen = asyncio.run(sdk_episode(url, gold.outputs))
    reference = http.open(task_id, DOMAIN, distractors=2)  # the HTTP view of the same task
    tools = seen["tools"]
    finish = tools.pop(FINISH_TOOL)
    assert [(t.name, t.description, t.input_schema) for t in tools.values()] == [
        (s["name"], s["description"], s["input_schema"]) for s in reference.tools
    ]  # the catalog as served over HTTP, distractors included
    assert finish.input_schema == reference.output_schema
    assert seen["sop"].text == reference.sop and reference.sop in seen["prompt"].text
    assert task_id in seen["task"].text and seen["good"].is_error is False
    refused = seen["refused"]
    assert refused.is_error is True
    assert refused.structured_content["error"]["code"] == "missing_argument"
    assert refused.structured_content["error"]["field"] == "smoking_status"
    assert seen["finished"].is_error is False
    assert seen["late"].structured_content["error"]["code"] == "episode_closed"
    assert seen["protocol_error"].data["code"] == "not_found"  # a JSON-RPC error, not a crash
    assert [t.name for t in seen["after"].tools] == [*tools, FINISH_TOOL]
    episode_id = seen["finished"].structured_content["episode_id"]
    record = http.record(episode_id, stack.admin_token)
    assert [c["error_code"] for c in record["calls"]] == [None, "missing_argument"]
    assert record["finished"] and record["outputs"] == gold.outputs


def test_the_door_refuses_what_it_cannot_serve(stack: Stack) -> None:
    async def open_unknown() -> MCPError:
        async with Client(f"{stack.gateway_url}/mcp/{DOMAIN}/T-nope?distractors=x",
                          mode="legacy") as client:  # fmt: skip
            with pytest.raises(MCPError) as raised:
                await client.list_tools()
            return raised.value

    error = asyncio.run(open_unknown())
    assert error.data == {"code": "invalid_value", "message": error.message,
                          "field": "distractors"}  # fmt: skip
    unknown = {PROTOCOL_VERSION_META_KEY: "2099-01-01", CLIENT_CAPABILITIES_META_KEY: {},
               CLIENT_INFO_META_KEY: {"name": "raw", "version": "1"}}  # fmt: skip
    modern = httpx.post(
        f"{stack.gateway_url}/mcp/{DOMAIN}/T1",
        json={"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": unknown}},
        headers={"mcp-protocol-version": "2099-01-01", "mcp-method": "tools/list",
                 "accept": "application/json, text/event-stream"},
    )  # fmt: skip
    error = modern.json()["error"]  # a JSON-RPC error a client can read: the version's
    assert error["code"] == UNSUPPORTED_VERSION and "2026-07-28" in error["data"]["supported"]


async def stateless_episode(task_url: str, outputs: dict[str, Any]) -> dict[str, Any]:
    """An episode with the SDK's client pinned to 2026-07-28: no handshake, no session."""
    seen: dict[str, Any] = {}
    async with Client(task_url, mode=STATELESS) as client:
        seen["at_task"] = [t.name for t in (await client.list_tools()).tools]
        with pytest.raises(MCPError) as raised:
            await client.read_resource(TASK_URI)
        seen["no_episode"] = raised.value
        opened = (await client.call_tool(OPEN_TOOL, {})).structured_content
    seen["url"] = opened["url"]
    async with Client(opened["url"], mode=STATELESS) as client:
        seen["tools"] = [t.name for t in (await client.list_tools()).tools]
        seen["task"] = (await client.read_resource(TASK_URI)).contents[0]
        seen["good"] = await client.call_tool(TOOL, GOOD)
        seen["refused"] = await client.call_tool(TOOL, {"patient_id": "P100000000"})
        seen["finished"] = await client.call_tool(FINISH_TOOL, outputs)
        seen["late"] = await client.call_tool(TOOL, GOOD)
    forged = opened["url"].rsplit("/", 1)[0] + "/not-the-token"
    async with Client(forged, mode=STATELESS) as client:
        with pytest.raises(MCPError) as raised:
            await client.list_tools()
        seen["forged"] = raised.value
    return seen


def test_a_client_pinned_to_2026_07_28_works_an_episode_by_its_handle(
    stack: Stack, http: GatewayClient, door: McpGatewayClient
) -> None:
    task_id = first_task(http)
    gold = domain_data(DOMAIN).gold[task_id]
    seen = asyncio.run(stateless_episode(door.task_url(task_id, DOMAIN), gold.outputs))
    assert seen["at_task"] == [OPEN_TOOL]
    assert seen["no_episode"].data["code"] == "invalid_request"
    assert "/mcp/_episode/" in seen["url"] and TOOL in seen["tools"]
    assert task_id in seen["task"].text and seen["good"].is_error is False
    assert seen["refused"].structured_content["error"]["code"] == "missing_argument"
    assert seen["finished"].is_error is False
    assert seen["late"].structured_content["error"]["code"] == "episode_closed"
    assert seen["forged"].data["code"] == "forbidden"
    record = http.record(seen["finished"].structured_content["episode_id"], stack.admin_token)
    assert [c["error_code"] for c in record["calls"]] == [None, "missing_argument"]
    assert record["finished"] and record["outputs"] == gold.outputs


@pytest.mark.parametrize("name,arguments,code", [c for c in CALLS if not isinstance(c[1], str)
                                                 and isinstance(c[1], dict)],
                         ids=lambda v: str(v)[:20])  # fmt: skip
def test_tool_calls_give_the_same_outcomes_as_http(
    stack: Stack, http: GatewayClient, door: McpGatewayClient, name: str, arguments: Any,
    code: str | None,
) -> None:  # fmt: skip
    task = task_id(DOMAIN, 0)
    over_http, over_mcp = http.open(task, DOMAIN), door.open(task, DOMAIN)
    a, b = over_http.call(name, arguments), over_mcp.call(name, arguments)
    assert (a.status, a.body) == (b.status, b.body)
    if code is not None:
        assert b.body["error"]["code"] == code
    ra, rb = (http.record(e.id, stack.admin_token)["calls"] for e in (over_http, over_mcp))
    assert [_no_timing(c) for c in ra] == [_no_timing(c) for c in rb]
    over_mcp.finish({})


# ---- parity across the three transports ----
def test_oracle_episodes_are_identical_over_http_grpc_and_mcp(stack: Stack) -> None:
    data = domain_data(DOMAIN)
    tasks = data.tasks[:PARITY_TASKS]
    tracing.setup_tracing(
        "sopgym-test-agent", endpoint=stack.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    )
    episodes: dict[str, dict[str, str]] = {t: {} for t in TRANSPORTS}
    try:
        for transport in TRANSPORTS:
            address = stack.grpc_target if transport == "grpc" else stack.gateway_url
            assert address is not None
            client = (
                McpGatewayClient(address, retries=0, protocol=HANDSHAKE)
                if transport.endswith(HANDSHAKE)
                else connect(address, transport, retries=0)
            )
            try:
                for task in tasks:
                    job = {"task": task.to_json(), "distractors": 2, "sop_variant": "clean",
                           "run_id": f"parity-{transport}",
                           "replay": replay_of(data.gold[task.id])}  # fmt: skip
                    report = run_job(OracleAgent(), client, job, 60.0, model="none")
                    assert report.status == "finished" and report.episode_id, report
                    episodes[transport][task.id] = report.episode_id
            finally:
                client.close()
        tracing.flush()
    finally:
        tracing.shutdown_tracing()
    admin = GatewayClient(stack.gateway_url)
    try:
        records = {
            t: {task: Trajectory.from_json(admin.record(e, stack.admin_token))
                for task, e in ids.items()}
            for t, ids in episodes.items()
        }  # fmt: skip
    finally:
        admin.close()
    traced = _traced_trajectories(Path(stack.logs).parent / "traces", episodes, data)
    for task in tasks:
        gold = data.gold[task.id]
        views, trace_views, scores = [], [], []
        for transport in TRANSPORTS:
            recorded, from_trace = records[transport][task.id], traced[transport][task.id]
            assert from_trace is not None, f"{transport} trace of {task.id} incomplete"
            # spans carry everything of a call but its result (the scorers never read it)
            assert _comparable(from_trace) == _comparable(recorded, results=False), transport
            views.append(_comparable(recorded))
            trace_views.append(_comparable(from_trace))
            scores += [score_episode(data.domain, task, t, gold).to_json()
                       for t in (recorded, from_trace)]  # fmt: skip
        assert all(v == views[0] for v in views), task.id
        assert all(v == trace_views[0] for v in trace_views), task.id
        assert all(s == scores[0] for s in scores) and scores[0]["success"], task.id
    _check_mcp_spans(Path(stack.logs).parent / "traces", episodes)


def _check_mcp_spans(traces: Path, episodes: dict[str, dict[str, str]]) -> None:
    """The door's spans follow the MCP conventions, per revision; a stateless request's
    ``_meta.traceparent`` put the door's span in the agent's trace."""
    spans = load_spans(traces).spans
    agent_trace = {sc.episode_of(s.attributes): s.trace_id for s in spans
                   if s.attributes.get(sc.GEN_AI_OPERATION) == sc.OP_INVOKE_AGENT}  # fmt: skip
    for transport, version in (("mcp", "2026-07-28"), (f"mcp-{HANDSHAKE}", "2025-11-25")):
        for episode in episodes[transport].values():
            calls = [s for s in spans if s.attributes.get(sc.GATEWAY_OP) == sc.OP_CALL
                     and sc.episode_of(s.attributes) == episode]  # fmt: skip
            assert calls, (transport, episode)
            for span in calls:
                a = span.attributes
                assert span.name == f"tools/call {a[sc.GEN_AI_TOOL_NAME]}", span.name
                assert a[sc.MCP_METHOD_NAME] == "tools/call"
                assert a[sc.MCP_PROTOCOL_VERSION] == version and a[sc.JSONRPC_REQUEST_ID]
                assert (sc.MCP_SESSION_ID in a) == (version != STATELESS)
                assert span.trace_id == agent_trace[episode], transport


def _traced_trajectories(
    traces: Path, episodes: dict[str, dict[str, str]], data: Any
) -> dict[str, dict[str, Trajectory | None]]:
    """Each episode's trajectory as the evaluator rebuilds it from the trace store (waiting
    for the gateway's batch exporter to deliver the last spans)."""
    wanted = {e for ids in episodes.values() for e in ids.values()}
    deadline = time.monotonic() + 30
    while True:
        found = {e.episode_id: e for e in assemble(load_spans(traces, sc.EVALUATED_SCOPES).spans)}
        ready = all(e in found and not found[e].problems for e in wanted)
        if ready or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    return {
        t: {task: found[e].trajectory(data.gold[task]) if e in found else None
            for task, e in ids.items()}
        for t, ids in episodes.items()
    }  # fmt: skip


def _no_timing(call: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in call.items() if k != "duration_ms"}


def _comparable(trajectory: Trajectory, results: bool = True) -> dict[str, Any]:
    """A trajectory without what differs between any two episodes (ids, timings)."""
    view = trajectory.to_json()
    view.pop("episode_id", None)
    view["calls"] = [_no_timing(c) for c in view["calls"]]
    if not results:
        view["calls"] = [{**c, "result": None} for c in view["calls"]]
    return view


def test_a_run_with_the_mcp_agent_scores_full_marks(tmp_path: Path) -> None:
    """``sopgym run --agent mcp``: the workers' episodes go through the MCP door only (the
    gateway's spans say so) and the scripted model's run scores TSR 100%, on a tool-use
    domain and on a dialogue one (the user messages go through the door too)."""
    command = [sys.executable, "-m", "sopgym", "run", DOMAIN, "helpdesk", "--agent", "mcp",
               "--model", "scripted", "--limit", "3", "--runs-dir", str(tmp_path), "--run-id",
               "m", "--data-root", str(DATA_ROOT)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads((tmp_path / "m" / "summary.json").read_bytes())
    assert summary["tasks"] == 6 and summary["tsr"] == 1.0
    rows = [orjson.loads(line) for line in (tmp_path / "m" / "results.jsonl").open()]
    talked = [r for r in rows if r["domain"] == "helpdesk"]
    assert talked and all(r["trajectory"]["messages"] for r in talked)
    spans = load_spans(tmp_path / "m" / "traces").spans
    names = {s.name for s in spans}
    assert any(n.startswith("tools/call ") for n in names)
    assert not any(n.startswith("POST /v1/episodes/{episode_id}") for n in names)
    # by default the agent speaks MCP's current revision: no handshake, no session
    door = [s.attributes for s in spans if s.name.startswith("tools/call ")]
    assert {a[sc.MCP_PROTOCOL_VERSION] for a in door} == {STATELESS}
    assert not any(sc.MCP_SESSION_ID in a for a in door)


def test_the_mcp_agents_client_is_pinned_to_the_current_revision() -> None:
    """``--agent mcp`` and ``--transport mcp`` connect through this client as the transport
    makes it: stateless 2026-07-28; the handshake revision only when asked for."""
    client = named_transport(McpAgent.transport).connect("http://127.0.0.1:9")
    assert isinstance(client, McpGatewayClient)
    try:
        assert client.mode == STATELESS == "2026-07-28"
    finally:
        client.close()
    old = McpGatewayClient("http://127.0.0.1:9", protocol=HANDSHAKE)
    try:
        assert old.mode == "legacy"  # the SDK's name for the handshake mode
    finally:
        old.close()


def test_the_docs_client_example_runs(stack: Stack) -> None:
    """The client SDK example (moved from the README to docs/bring-your-own.md), run as
    written against this stack's gateway."""
    page = (Path(__file__).parent.parent / "docs" / "bring-your-own.md").read_text()
    section = page.split("## Bring any agent", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    printed: list[tuple[Any, ...]] = []
    code = example.replace("http://127.0.0.1:8000", stack.gateway_url)
    exec(compile(code, "bring-your-own.md", "exec"), {"print": lambda *a: printed.append(a)})
    assert printed[1] == (422, "missing_argument", "insurance_provider")
    assert printed[2][0] is True and printed[3][:2] == (2, True)


def test_requests_arriving_together_open_one_episode(stack: Stack, door: McpGatewayClient) -> None:
    async def together(url: str) -> tuple[Any, ...]:
        async with Client(url, mode="legacy") as client:
            return await asyncio.gather(client.list_tools(), client.read_resource(TASK_URI),
                                        client.read_resource(TASK_URI))  # fmt: skip

    before = httpx.get(f"{stack.gateway_url}/healthz").json()["episodes"]
    _, first, second = asyncio.run(together(door.task_url(task_id(DOMAIN, 1), DOMAIN)))
    assert first.contents[0].text == second.contents[0].text
    assert httpx.get(f"{stack.gateway_url}/healthz").json()["episodes"] == before + 1

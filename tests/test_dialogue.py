"""Conversations with a simulated user, through real processes on loopback.

The helpdesk test pack (tests/testpacks) is a dialogue domain: the customer's order number and
email are private facts the agent must ask for. Checked here: the user simulator's
determinism per seed; the gateway's messages endpoint over HTTP and gRPC (replies, refusals,
both turns on the episode record and on the trace); that the private profile never reaches
the agent; the LLM-played user over a real Chat Completions endpoint; and `sopgym run` with the
oracle and with fc/react on the scripted model scoring 100%.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import grpc
import httpx
import orjson
import pytest

from sopgym.client import GatewayClient
from sopgym.client.over_grpc import GrpcGatewayClient
from sopgym.core.access import SECRET_HEADER
from sopgym.core.dialogue import AGENT
from sopgym.core.errors import ToolError
from sopgym.core.registry import DOMAIN_PACKAGES_ENV
from sopgym.evaluation.episodes import assemble
from sopgym.evaluation.sources import load_spans
from sopgym.gateway.catalog import Catalog, ServiceEntry
from sopgym.gateway.core import GatewayCore
from sopgym.observability import semconv as sc
from sopgym.orchestration.stack import Stack, embedded_stack
from sopgym.services.user.llm_user import DONE_MARKER, LLMUser
from sopgym.services.user.simulator import UserSimulator
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "helpdesk"
PACKS = "tests.testpacks"


@pytest.fixture(scope="module", autouse=True)
def test_packs() -> Iterator[None]:
    """The registry (and every child process) sees the test packs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DOMAIN_PACKAGES_ENV, PACKS)
        domain_data(DOMAIN)
        yield


@pytest.fixture(scope="module")
def traced_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Path]]:
    root = tmp_path_factory.mktemp("dialogue")
    domain_data("patient_intake")
    with embedded_stack(
        [DOMAIN, "patient_intake"], root / "logs", DATA_ROOT, traces=root / "traces", grpc=True
    ) as stack:
        yield stack, root / "traces"


def _profile(task_id: str) -> dict:
    """The task's private user profile (every helpdesk task has one)."""
    profile = domain_data(DOMAIN).gold[task_id].user
    assert profile is not None
    return profile


def _replay(simulator: UserSimulator, task_id: str, agent_turns: list[str]) -> list[str]:
    """The user's replies to ``agent_turns`` said in order."""
    messages: list[dict] = []
    replies = []
    for text in agent_turns:
        messages.append({"role": AGENT, "content": text})
        turn = simulator.reply({"domain": DOMAIN, "task_id": task_id, "messages": messages})
        messages.append({"role": "user", "content": turn.content})
        replies.append(turn.content)
    return replies


def test_the_user_is_deterministic_for_a_seed_and_replays_the_gold() -> None:
    data = domain_data(DOMAIN)
    default = UserSimulator([DOMAIN], DATA_ROOT)
    same, other = UserSimulator([DOMAIN], DATA_ROOT, seed=11), UserSimulator(
        [DOMAIN], DATA_ROOT, seed=12
    )
    differ = 0
    for task in data.tasks:
        gold = data.gold[task.id]
        said = [m["content"] for m in gold.messages if m["role"] == AGENT]
        heard = [m["content"] for m in gold.messages if m["role"] != AGENT]
        assert _replay(default, task.id, said) == heard  # the pack's seed: the gold's user
        first, again = _replay(same, task.id, said), _replay(other, task.id, said)
        assert first == _replay(UserSimulator([DOMAIN], DATA_ROOT, seed=11), task.id, said)
        differ += first != again
        # the facts are the profile's whatever the seed: only the wording varies
        assert _profile(task.id)["order_id"] in first[0] and _profile(task.id)["email"] in first[1]
    assert differ > 0, "another seed never changed a reply"


def test_the_private_profile_never_reaches_the_agent(traced_stack: tuple[Stack, Path]) -> None:
    stack, _ = traced_stack
    data = domain_data(DOMAIN)
    client = GatewayClient(stack.gateway_url, retries=0)
    try:
        listed = orjson.dumps(client.tasks(DOMAIN))
        for task in data.tasks:
            profile = _profile(task.id)
            opened = client.request("POST", "/v1/episodes", json={"task_id": task.id,
                                                                   "domain": DOMAIN}).body
            given = orjson.dumps(task.to_json())  # the job a worker gets
            for secret in (profile["order_id"], profile["email"]):
                assert secret.encode() not in listed + opened + given, (task.id, secret)
            assert task.kind == "dialogue" and task.conversation[0]["role"] == "user"
    finally:
        client.close()


def test_a_conversation_over_http_and_grpc_is_recorded_and_traced(
    traced_stack: tuple[Stack, Path],
) -> None:
    stack, traces = traced_stack
    task = domain_data(DOMAIN).tasks[0]
    profile = _profile(task.id)
    client = GatewayClient(stack.gateway_url, retries=0)
    assert stack.grpc_target is not None
    remote = GrpcGatewayClient(stack.grpc_target, retries=0)
    try:
        episode = client.open(task.id, DOMAIN)
        asked = episode.message("What is your order number?")
        assert asked.ok and profile["order_id"] in asked.content["reply"]
        assert asked.content["done"] is False
        url = f"{stack.gateway_url}/v1/episodes/{episode.id}/messages"
        token = {"authorization": f"Bearer {episode.token}"}
        refusals = [
            (httpx.post(url, json={"content": "hi?"}), 401, "unauthorized"),
            (httpx.post(url, json={}, headers=token), 422, "missing_argument"),
            (httpx.post(url, json={"content": 5}, headers=token), 422, "type_mismatch"),
            (httpx.post(url, json={"content": " "}, headers=token), 422, "invalid_value"),
            (httpx.post(url, content=b"{oops", headers=token), 400, "invalid_json"),
        ]
        for response, status, code in refusals:
            assert (response.status_code, response.json()["error"]["code"]) == (status, code)
        # the same episode, over gRPC
        again = remote.record(episode.id, episode.token)  # the token works on both transports
        assert len(again["messages"]) == 2
        grpc_episode = remote.open(task.id, DOMAIN)
        said = grpc_episode.message("Which email address did you use for the order?")
        assert said.ok and profile["email"] in said.content["reply"]
        bye = grpc_episode.message("Your refund has been issued.")
        assert bye.content["done"] is True
        over = grpc_episode.message("Anything else?")
        assert (over.status, over.body["error"]["code"]) == (409, "conversation_over")
        grpc_episode.finish({"decision": "refunded"})
        closed = grpc_episode.message("Hello?")
        assert (closed.status, closed.body["error"]["code"]) == (409, "episode_closed")
        plain = client.open("patient_intake-001", "patient_intake")
        refused = plain.message("Hello?")
        assert (refused.status, refused.body["error"]["code"]) == (409, "no_conversation")
        with pytest.raises(grpc.RpcError) as raised:
            remote.invoke("SendMessage", remote.pb2.SendMessageRequest(
                episode_id=plain.id, content="Hello?"), plain.token)  # fmt: skip
        assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        record = client.record(grpc_episode.id, stack.admin_token)
        assert [m["role"] for m in record["messages"]] == ["agent", "user"] * 2
        assert record["messages"][0]["content"].startswith("Which email") and not record["calls"]
        metrics = httpx.get(f"{stack.gateway_url}/metrics").text
        counted = [line for line in metrics.splitlines()
                   if line.startswith("sopgym_gateway_user_messages") and DOMAIN in line]
        assert {line.split('transport="')[1][:4] for line in counted} == {"http", "grpc"}
    finally:
        client.close()
        remote.close()
    _check_traces(traces, grpc_episode.id, record["messages"])


def _check_traces(traces: Path, episode_id: str, messages: list[dict]) -> None:
    """The finish span carries the conversation the record holds; one span per exchange."""
    deadline = time.monotonic() + 15
    while True:  # spans arrive in batches: wait for the finish span
        found = [e for e in assemble(load_spans(traces).spans) if e.episode_id == episode_id]
        if (found and found[0].finish is not None) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    (episode,) = found
    assert episode.finish is not None
    assert json.loads(episode.finish.attributes[sc.MESSAGES]) == messages
    exchanges = [
        s for s in load_spans(traces).spans
        if s.attributes.get(sc.GATEWAY_OP) == sc.OP_MESSAGE
        and s.attributes.get(sc.EPISODE_ID) == episode_id
    ]  # fmt: skip
    assert sorted(s.attributes[sc.MESSAGE_INDEX] for s in exchanges) == [0, 1]
    assert any(s.attributes.get(sc.MESSAGE_DONE) for s in exchanges)


def test_the_simulator_refuses_what_it_cannot_answer(traced_stack: tuple[Stack, Path]) -> None:
    stack, _ = traced_stack
    url = f"{stack.user_sim_url}/v1/reply"
    task = domain_data(DOMAIN).tasks[0]
    said = [{"role": AGENT, "content": "Order number?"}]
    cases = [
        ({"domain": DOMAIN, "task_id": "nope", "messages": said}, 404, "not_found"),
        ({"domain": "patient_intake", "task_id": task.id, "messages": said}, 404, "not_found"),
        ({"domain": DOMAIN, "task_id": task.id, "messages": []}, 422, "invalid_value"),
        ({"domain": DOMAIN, "task_id": task.id,
          "messages": [*said, {"role": "user", "content": "hi"}]}, 422, "invalid_value"),
        ({"domain": DOMAIN, "task_id": task.id, "messages": [{"role": "x"}]}, 422,
         "invalid_value"),
    ]  # fmt: skip
    gateway = {SECRET_HEADER.decode(): stack.service_secret}  # it answers the gateway only
    for body, status, code in cases:
        response = httpx.post(url, json=body, headers=gateway)
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), body
    garbage = httpx.post(url, content=b"[1", headers=gateway)
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (400, "invalid_json")


def test_a_gateway_without_a_simulator_refuses_messages() -> None:
    entry = ServiceEntry(DOMAIN, "http://127.0.0.1:9", "127.0.0.1", 9, {}, kind="dialogue")
    core = GatewayCore(Catalog([entry]))
    episode = core.episodes.open("helpdesk-001", DOMAIN, {}, set(), {})
    with pytest.raises(ToolError) as refused:
        asyncio.run(core.message(episode, {"content": "Hello?"}, "http"))
    assert (refused.value.code, refused.value.status) == ("upstream_unavailable", 502)
    assert episode.messages == []  # a refused message is not recorded


class _ChatStub(BaseHTTPRequestHandler):
    """A Chat Completions endpoint that answers every request with one canned reply."""

    requests: ClassVar[list[dict]] = []
    answer = ""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).requests.append(body)
        payload = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": type(self).answer}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: object) -> None:
        pass


def test_a_model_can_play_the_user() -> None:
    task = domain_data(DOMAIN).tasks[0]
    profile = _profile(task.id)
    _ChatStub.answer = f"It is {profile['order_id']}, thanks! {DONE_MARKER}"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatStub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        simulator = UserSimulator([DOMAIN], DATA_ROOT, model=LLMUser("openai:user-model", base))
        turn = simulator.reply({"domain": DOMAIN, "task_id": task.id,
                                "messages": [{"role": AGENT, "content": "Order number?"}]})
    finally:
        server.shutdown()
        server.server_close()
    assert (turn.content, turn.done) == (f"It is {profile['order_id']}, thanks!", True)
    (request,) = _ChatStub.requests
    system, opening, question = request["messages"]
    assert system["role"] == "system" and profile["email"] in system["content"]
    # the model speaks as the user: the user's turns are its own, the agent's the other side
    assert (opening["role"], opening["content"]) == ("assistant", task.conversation[0]["content"])
    assert (question["role"], question["content"]) == ("user", "Order number?")


@pytest.mark.parametrize(
    "args",
    [
        ("--agent", "oracle"),  # traced: the evaluator reads the conversations back
        ("--agent", "fc", "--no-trace"),
        ("--agent", "react", "--transport", "grpc", "--no-trace"),
    ],
)
def test_sopgym_run_scores_every_helpdesk_task(args: tuple[str, ...], tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", DOMAIN, *args, "--workers", "2",
         "--runs-dir", str(tmp_path), "--run-id", "r", "--data-root", str(DATA_ROOT)],
        capture_output=True, text=True, timeout=300, env={**os.environ},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = orjson.loads((tmp_path / "r" / "summary.json").read_bytes())
    tasks = len(domain_data(DOMAIN).tasks)
    assert (summary["tasks"], summary["tsr"], summary["errors"]) == (tasks, 1.0, {}), summary
    for line in (tmp_path / "r" / "results.jsonl").read_bytes().splitlines():
        row = orjson.loads(line)
        gold = domain_data(DOMAIN).gold[row["task_id"]]
        trajectory = row["trajectory"]
        assert trajectory["messages"] == [{"role": m["role"], "content": m["content"]}
                                          for m in gold.messages]  # fmt: skip
        assert [c["name"] for c in trajectory["calls"]] == [c.name for c in gold.calls]
    if "--no-trace" not in args:
        rebuilt = {e.task_id: e.trajectory() for e in assemble(load_spans(tmp_path / "r").spans)}
        for task_id, gold in domain_data(DOMAIN).gold.items():
            trajectory = rebuilt[task_id]
            assert trajectory is not None, task_id
            assert trajectory.messages == [{"role": m["role"], "content": m["content"]}
                                           for m in gold.messages]  # fmt: skip

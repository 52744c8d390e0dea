"""A hung tool must not block its service: the tool service runs each call's implementation in
its own pool under a per-call timeout, answers 504 ``tool_timeout`` when it runs out, and keeps
answering every other call meanwhile (real uvicorn, real HTTP)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import httpx

from sopgym.client import GatewayClient
from sopgym.core.registry import load_domain
from sopgym.core.tools import ToolContext, arguments_schema, result_schema, tool
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.scorers.calls import error_taxonomy
from sopgym.services.tools.app import create_app
from sopgym.types import JSON
from tests.helpers import DATA_ROOT, domain_data
from tests.test_gateway_server_hostile import uvicorn_serving

TIMEOUT_S = 0.5
released = threading.Event()  # set at the end of the test: the hung threads return


@tool(
    name="settle_batch",
    description="Settles the day's batch (in this test: hangs until the test ends).",
    input_schema=arguments_schema({}),
    output_schema=result_schema({"settled": {"type": "boolean"}}),
)
def settle_batch(args: JSON, ctx: ToolContext) -> JSON:
    released.wait(60)
    return {"settled": True}


def test_a_hung_tool_times_out_while_the_service_answers_other_calls() -> None:
    crm = load_domain("crm")
    pack = replace(crm, tools=[*crm.tools, settle_batch])
    account = domain_data("crm").gold["crm-000"].calls[0].arguments["account_id"]
    released.clear()
    with uvicorn_serving(create_app(pack, DATA_ROOT, tool_timeout_s=TIMEOUT_S)) as url:
        hung: list[tuple[httpx.Response, float]] = []

        def call_hung() -> None:
            started = time.monotonic()
            answer = httpx.post(f"{url}/v1/tools/settle_batch", json={}, timeout=30)
            hung.append((answer, time.monotonic() - started))

        callers = [threading.Thread(target=call_hung) for _ in range(4)]
        for caller in callers:
            caller.start()
        time.sleep(0.1)  # four implementations now hang in the service's pool
        with httpx.Client(base_url=url, timeout=5) as client:
            for _ in range(20):  # the service keeps answering meanwhile, each call at once
                started = time.monotonic()
                answer = client.post("/v1/tools/get_account", json={"account_id": account})
                assert answer.status_code == 200, answer.text
                assert time.monotonic() - started < TIMEOUT_S / 2
            assert client.get("/readyz").status_code == 200
        for caller in callers:
            caller.join(10)
        assert len(hung) == 4
        for answer, took in hung:
            assert answer.status_code == 504
            error = answer.json()["error"]
            assert error["code"] == "tool_timeout" and "settle_batch" in error["message"]
            assert TIMEOUT_S <= took < TIMEOUT_S + 1.5

        # the client gives a tool_timeout to the agent as the tool's answer, not retried
        # (the same call would hang again) and not an infrastructure error
        sdk = GatewayClient(url, retries=4, backoff=0.5)
        started = time.monotonic()
        reply = sdk.request("POST", "/v1/tools/settle_batch", json={})
        assert reply.status == 504 and time.monotonic() - started < TIMEOUT_S + 0.4
        sdk.close()
    released.set()


def test_an_episodes_calls_wait_for_its_hung_call_while_other_episodes_go_on() -> None:
    """Calls of one episode act on its state one at a time, as the agent made them: behind a
    hung call, the episode's next call times out too; another episode is not held up."""
    crm = load_domain("crm")
    pack = replace(crm, tools=[*crm.tools, settle_batch])
    account = {"account_id": domain_data("crm").gold["crm-000"].calls[0].arguments["account_id"]}
    released.clear()
    with (
        uvicorn_serving(create_app(pack, DATA_ROOT, tool_timeout_s=TIMEOUT_S)) as url,
        httpx.Client(base_url=url, timeout=5) as client,
    ):
        for episode in ("ep-a", "ep-b"):
            opened = client.post("/v1/episodes", json={"episode_id": episode, "task_id": "crm-000"})
            assert opened.status_code == 201, opened.text
        hung = threading.Thread(
            target=client.post,
            args=("/v1/tools/settle_batch",),
            kwargs={"json": {}, "headers": {"x-sopgym-episode": "ep-a"}},
        )
        hung.start()
        time.sleep(0.1)
        other = client.post("/v1/tools/get_account", json=account,
                            headers={"x-sopgym-episode": "ep-b"})  # fmt: skip
        assert other.status_code == 200, other.text
        behind = client.post("/v1/tools/get_account", json=account,
                             headers={"x-sopgym-episode": "ep-a"})  # fmt: skip
        assert behind.status_code == 504 and behind.json()["error"]["code"] == "tool_timeout"
        hung.join(10)
    released.set()


def test_a_timed_out_call_is_the_evaluators_tool_error() -> None:
    gold = domain_data("crm").gold["crm-000"]
    timed_out = CallRecord("get_account", {}, 504, error_code="tool_timeout")
    trajectory = Trajectory("crm-000", "e", calls=[timed_out])
    assert error_taxonomy(trajectory, gold)["tool_error"] == 1

"""Hardening (issue 36, point 3): a tool that hangs takes at most its share of its domain's
pool, so the domain's other tools keep answering (real uvicorn, real HTTP), and a call our own
service answered ``tool_timeout`` is the infrastructure's failure, not the agent's error,
unless the tool is documented as slow by design."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import httpx

from sopgym.core.registry import load_domain
from sopgym.core.tools import ToolContext, arguments_schema, result_schema, tool
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.services.tools.app import TOOL_THREADS, create_app
from sopgym.types import JSON
from tests.helpers import DATA_ROOT, domain_data
from tests.test_gateway_server_hostile import uvicorn_serving

TIMEOUT_S = 1.0
released = threading.Event()


def _hang(args: JSON, ctx: ToolContext) -> JSON:
    released.wait(60)
    return {"settled": True}


ARGUMENTS, RESULT = arguments_schema({}), result_schema({"settled": {"type": "boolean"}})
settle_batch = tool("settle_batch", "Settles the day's batch (here: hangs).", ARGUMENTS, RESULT)(
    _hang
)
nightly_report = tool(
    "nightly_report", "Builds the nightly report; may take minutes.", ARGUMENTS, RESULT,
    slow_by_design=True,
)(_hang)  # fmt: skip


def test_a_hung_tool_cannot_take_its_domains_pool() -> None:
    crm = load_domain("crm")
    pack = replace(crm, tools=[*crm.tools, settle_batch])
    account = domain_data("crm").gold["crm-000"].calls[0].arguments["account_id"]
    released.clear()
    try:
        with uvicorn_serving(create_app(pack, DATA_ROOT, tool_timeout_s=TIMEOUT_S)) as url:
            with ThreadPoolExecutor(TOOL_THREADS + 8) as callers:
                hung = [
                    callers.submit(httpx.post, f"{url}/v1/tools/settle_batch", json={}, timeout=30)
                    for _ in range(TOOL_THREADS + 8)
                ]
                answers = [h.result() for h in hung]
                # more hung calls than the pool has threads: the healthy tool still answers
                healthy = httpx.post(f"{url}/v1/tools/get_account",
                                     json={"account_id": account}, timeout=30)  # fmt: skip
            assert healthy.status_code == 200, healthy.text
            assert {a.status_code for a in answers} == {504}
            assert {a.json()["error"]["code"] for a in answers} == {"tool_timeout"}
    finally:
        released.set()


def test_a_hung_call_is_infrastructure_and_the_other_tools_score_normally() -> None:
    crm = load_domain("crm")
    pack = replace(crm, tools=[*crm.tools, settle_batch, nightly_report])
    data = domain_data("crm")
    task = data.tasks[0]
    gold = data.gold[task.id]
    good = [CallRecord(c.name, c.arguments, 200, result={}) for c in gold.calls]

    def scored(calls: list[CallRecord]) -> dict:
        trajectory = Trajectory(task.id, "ep", calls=calls, finished=True, outputs=gold.outputs)
        return score_episode(pack, task, trajectory, gold).to_json()

    normal = scored(good)
    assert normal["infra_error"] is None and normal["completed"]
    hung = scored([*good, CallRecord("settle_batch", {}, 504, error_code="tool_timeout")])
    assert hung["infra_error"] and "settle_batch" in hung["infra_error"]
    assert hung["errors"] == {} and not hung["success"]
    slow = scored([*good, CallRecord("nightly_report", {}, 504, error_code="tool_timeout")])
    assert slow["infra_error"] is None and slow["errors"].get("tool_error") == 1


def test_through_the_gateway_hung_calls_are_infrastructure_and_others_score_normally() -> None:
    """The hanging-tool pack behind a real gateway: an episode that met the hung tool is an
    infrastructure failure; one that did not scores as usual (a success)."""
    from sopgym.client import GatewayClient
    from sopgym.core.trajectory import Trajectory as Played
    from sopgym.gateway.app import Gateway
    from sopgym.gateway.catalog import discover
    from tests.test_gateway_server import running

    crm = load_domain("crm")
    pack = replace(crm, tools=[*crm.tools, settle_batch])
    data = domain_data("crm")
    task = data.tasks[0]
    gold = data.gold[task.id]
    released.clear()
    try:
        with uvicorn_serving(create_app(pack, DATA_ROOT, tool_timeout_s=TIMEOUT_S)) as url:
            gateway = Gateway(discover({"crm": url}), admin_token="admin")
            with running(gateway) as serving:
                client = GatewayClient(f"http://127.0.0.1:{serving.port}", retries=0)
                scores = []
                for meets_the_hung_tool in (True, False):
                    episode = client.open(task.id, "crm")
                    for call in gold.calls:
                        assert episode.call(call.name, call.arguments).ok
                    if meets_the_hung_tool:
                        assert episode.call("settle_batch", {}).status == 504
                    episode.finish(gold.outputs)
                    record = Played.from_json(client.record(episode.id, "admin"))
                    scores.append(score_episode(pack, task, record, gold).to_json())
                client.close()
    finally:
        released.set()
    hung, normal = scores
    assert hung["infra_error"] and "settle_batch: tool_timeout" in hung["infra_error"]
    assert normal["infra_error"] is None and normal["success"] and normal["errors"] == {}

"""Stateful episodes and (domain, tool) routing, through real processes on loopback.

The ledger test pack is stateful (every task's book has the same account ids with its own
balances, and the reference policy writes to it); crm is stateless and has a ``get_account``
of its own. Tool services hold each episode's state from the gateway's registration to its
close, and the gateway's record carries the own domain's final state.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
import pytest

from sopgym.client import GatewayClient, InfraError
from sopgym.client.over_grpc import GrpcGatewayClient
from sopgym.core.access import SECRET_HEADER
from sopgym.core.dataset import DomainData
from sopgym.core.registry import DOMAIN_PACKAGES_ENV
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import TaskScore, score_episode
from sopgym.evaluation.sources import load_spans
from sopgym.gateway.catalog import Catalog, ServiceEntry, ToolRef
from sopgym.observability import semconv as sc
from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command
from sopgym.orchestration.stack import Stack, embedded_stack
from tests.helpers import DATA_ROOT, domain_data

REPO = Path(__file__).resolve().parent.parent
EPISODE = "x-sopgym-episode"


def gateway_like(stack: Stack) -> httpx.Client:
    """A client sending the stack's service secret, as the gateway does."""
    return httpx.Client(headers={SECRET_HEADER.decode(): stack.service_secret})


@pytest.fixture(scope="module", autouse=True)
def testpacks() -> Iterator[None]:
    """The test packs, for this process and every server it starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DOMAIN_PACKAGES_ENV, "tests.testpacks")
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO),
                                                                 os.environ.get("PYTHONPATH")])))
        yield


@pytest.fixture(scope="module")
def stack(testpacks: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    domain_data("ledger"), domain_data("crm")
    root = tmp_path_factory.mktemp("state")
    with embedded_stack(["ledger", "crm"], root / "logs", DATA_ROOT, traces=root / "traces",
                        grpc=True) as running:  # fmt: skip
        yield running


@pytest.fixture
def client(stack: Stack) -> Iterator[GatewayClient]:
    gateway = GatewayClient(stack.gateway_url, retries=0)
    yield gateway
    gateway.close()


def ledger() -> DomainData:
    return domain_data("ledger")


def initial_state(task_id: str) -> dict:
    data = ledger()
    task = next(t for t in data.tasks if t.id == task_id)
    state = data.domain.context(data.tables, None, task).state
    assert state is not None
    return state


def open_episodes(stack: Stack, domain: str) -> int:
    return httpx.get(f"{stack.services[domain]}/readyz").json()["episodes"]


def play_gold(client: GatewayClient, task_id: str, stack: Stack) -> dict:
    """Replay the task's gold calls through the gateway, finish, and answer the record."""
    gold = ledger().gold[task_id]
    episode = client.open(task_id, "ledger")
    for call in gold.calls:
        result = episode.call(call.name, call.arguments)
        assert result.ok, result.body
    episode.finish(gold.outputs)
    return client.record(episode.id, stack.admin_token)


def scored(record: dict) -> TaskScore:
    """The gateway's record of a ledger episode, scored by the one scoring entry."""
    data = ledger()
    task = next(t for t in data.tasks if t.id == record["task_id"])
    trajectory = Trajectory.from_json(record)
    return score_episode(data.domain, task, trajectory, data.gold[task.id])


def test_the_final_state_is_the_gold_and_a_wrong_write_is_not(
    stack: Stack, client: GatewayClient
) -> None:
    by_branch = {g.decisions["branch"]: g for g in reversed(ledger().gold.values())}
    for gold in by_branch.values():  # a transfer, a hold, and the two rejections
        record = play_gold(client, gold.task_id, stack)
        assert record["final_state"] == gold.final_state, gold.task_id
        assert record["close_errors"] == {}
        assert scored(record).success, gold.task_id
    transfer = by_branch["transfer"]
    episode = client.open(transfer.task_id, "ledger")
    wrong = {**transfer.calls[-1].arguments}
    wrong["amount"] += 1
    assert episode.call("transfer_funds", wrong).ok
    episode.finish(transfer.outputs)
    record = client.record(episode.id, stack.admin_token)
    assert record["final_state"] is not None and record["final_state"] != transfer.final_state
    score = scored(record)  # the right answer over a wrong write: the state scorer fails it
    assert score.fields and all(score.fields.values())
    assert not score.success and score.scores["final_state"]["value"] == 0.0
    assert "balance" in score.scores["final_state"]["explanation"]
    assert open_episodes(stack, "ledger") == 0, "closed episodes are freed at the service"


def test_concurrent_episodes_keep_to_their_own_state(stack: Stack) -> None:
    tasks = [t.id for t in ledger().tasks]
    jobs = [tasks[i % len(tasks)] for i in range(50)]  # each book in use ~3 times at once

    def run(task_id: str) -> tuple[str, dict]:
        gateway = GatewayClient(stack.gateway_url, retries=0)
        try:
            return task_id, play_gold(gateway, task_id, stack)
        finally:
            gateway.close()

    with ThreadPoolExecutor(16) as pool:
        records = list(pool.map(run, jobs))
    for task_id, record in records:
        assert record["final_state"] == ledger().gold[task_id].final_state, task_id
    assert len({r["episode_id"] for _, r in records}) == 50
    assert open_episodes(stack, "ledger") == open_episodes(stack, "crm") == 0


def test_services_refuse_episodes_they_were_not_told_of(stack: Stack) -> None:
    tools = {d: f"{url}/v1/tools/get_account" for d, url in stack.services.items()}
    args = {"account_id": "ACC-0001"}
    sent = gateway_like(stack)  # requests as the gateway's, with its secret
    outside = sent.post(tools["ledger"], json=args)
    assert (outside.status_code, outside.json()["error"]["code"]) == (400, "episode_required")
    assert sent.post(tools["crm"], json=args).status_code == 200, "stateless: still served"
    for url in tools.values():
        unknown = sent.post(url, json=args, headers={EPISODE: "ep-made-up"})
        assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "unknown_episode")
    registering = sent.post(f"{stack.services['ledger']}/v1/episodes",
                             json={"episode_id": "ep-x", "task_id": "ledger-999"})
    assert registering.status_code == 404
    assert registering.json()["error"] == {
        "code": "not_found", "message": "no task 'ledger-999' in ledger", "field": "task_id"}
    before = sent.get(f"{stack.gateway_url}/readyz").json()["episodes"]
    opened = sent.post(f"{stack.gateway_url}/v1/episodes",
                        json={"domain": "ledger", "task_id": "ledger-999"})
    assert (opened.status_code, opened.json()["error"]["field"]) == (404, "task_id")
    assert sent.get(f"{stack.gateway_url}/readyz").json()["episodes"] == before
    closing = sent.delete(f"{stack.services['ledger']}/v1/episodes/ep-never")
    assert (closing.status_code, closing.json()["error"]["code"]) == (404, "unknown_episode")
    register = f"{stack.services['ledger']}/v1/episodes"
    garbage = sent.post(register, content=b"{oops")
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (400, "invalid_json")
    missing = sent.post(register, json={"task_id": "ledger-000"})
    assert (missing.status_code, missing.json()["error"]["field"]) == (422, "episode_id")
    first = {"episode_id": "ep-twice", "task_id": "ledger-000"}
    assert sent.post(register, json=first).status_code == 201
    assert sent.post(register, json=first).status_code == 200, "a retried registration"
    other = sent.post(register, json={**first, "task_id": "ledger-001"})
    assert (other.status_code, other.json()["error"]["field"]) == (422, "episode_id")
    closed = sent.delete(f"{register}/ep-twice").json()
    assert closed["final_state"] == initial_state("ledger-000"), "no call: as it started"


def test_a_shared_tool_name_reaches_each_domains_own_service(
    stack: Stack, client: GatewayClient
) -> None:
    task = ledger().tasks[0]
    episode = client.open(task.id, "ledger", distractors=10)  # every tool there is to draw
    shown = {t["name"]: t for t in episode.tools}
    assert set(shown) == {"get_account", "transfer_funds", "place_hold", "get_fx_rate",
                          "crm__get_account", "count_products", "get_branch_hours"}
    qualified = shown["crm__get_account"]
    assert qualified["openai"]["function"]["name"] == "crm__get_account"
    assert qualified["anthropic"]["name"] == qualified["bedrock"]["toolSpec"]["name"] \
        == "crm__get_account"
    own = episode.call("get_account", {"account_id": "ACC-0001"})
    foreign = episode.call("crm__get_account", {"account_id": "ACC-0001"})
    assert own.ok and "available" in own.body["result"], own.body
    assert foreign.ok and foreign.body["result"]["segment"], foreign.body
    assert episode.call("get_account", {"account_id": "ACC-0002"}).ok
    assert open_episodes(stack, "crm") == 1, "registered at crm on its first call there"
    episode.finish({"outcome": "rejected"})
    record = client.record(episode.id, stack.admin_token)
    assert [(c["name"], c["distractor"], c["in_catalog"]) for c in record["calls"]] == [
        ("get_account", False, True), ("crm__get_account", True, True),
        ("get_account", False, True)]
    assert record["final_state"] == initial_state(task.id), "reads leave the state as it was"
    assert open_episodes(stack, "crm") == open_episodes(stack, "ledger") == 0
    # crm's own get_account goes to crm; ledger's tools are never another domain's distractors
    crm = client.open("crm-000", "crm", distractors=10)
    assert {t["name"] for t in crm.tools} == {"get_account", "count_products",
                                              "get_branch_hours"}
    assert crm.call("get_account", {"account_id": "ACC-0001"}).body["result"]["segment"]
    crm.finish({"service_tier": "private"})
    assert client.record(crm.id, stack.admin_token)["final_state"] is None


def test_idle_episodes_expire_and_a_failed_close_is_recorded(
    testpacks: None, tmp_path: Path
) -> None:
    domain_data("ledger")
    with ProcessGroup() as group:
        service = f"http://127.0.0.1:{free_port()}"
        tools = group.start(
            "tools-ledger",
            sopgym_command("serve-tools", "ledger", "--port", service.rsplit(":", 1)[1],
                           "--data-root", str(DATA_ROOT), "--episode-idle-timeout", "0.5"),
            tmp_path / "tools.log", ready_url=f"{service}/readyz",
        )
        tools.wait_ready()
        gateway_url = f"http://127.0.0.1:{free_port()}"
        group.start(
            "gateway",
            sopgym_command("gateway", "--port", gateway_url.rsplit(":", 1)[1],
                           "--service", f"ledger={service}"),
            tmp_path / "gateway.log", env={"SOPGYM_ADMIN_TOKEN": "admin"},
            ready_url=f"{gateway_url}/readyz",
        ).wait_ready()
        client = GatewayClient(gateway_url, retries=0)
        abandoned = client.open("ledger-000", "ledger")
        assert httpx.get(f"{service}/readyz").json()["episodes"] == 1
        time.sleep(0.8)
        assert httpx.get(f"{service}/readyz").json()["episodes"] == 0, "freed when idle"
        # the service no longer holds the episode (expired, as after a restart): the gateway
        # answers service_unavailable, the infrastructure's failure, not the agent's refusal
        with pytest.raises(InfraError, match="lost the episode"):
            abandoned.call("get_account", {"account_id": "ACC-0001"})
        abandoned.finish({"outcome": "rejected"})
        record = client.record(abandoned.id, "admin")
        assert record["final_state"] is None
        assert record["close_errors"]["ledger"].startswith("unknown_episode")
        # the service gone: the finish still records the outputs, and says the state is lost
        orphan = client.open("ledger-001", "ledger")
        tools.stop()
        orphan.finish({"outcome": "rejected"})
        record = client.record(orphan.id, "admin")
        assert record["outputs"] == {"outcome": "rejected"} and record["final_state"] is None
        assert record["close_errors"]["ledger"].startswith("service_unavailable")
        client.close()


def test_both_transports_put_the_final_state_on_the_finish_span(stack: Stack) -> None:
    gold = ledger().gold["ledger-001"]
    rpc = GrpcGatewayClient(str(stack.grpc_target))
    episode = rpc.open(gold.task_id, "ledger")
    for call in gold.calls:
        assert episode.call(call.name, call.arguments).ok
    episode.finish(gold.outputs)
    rpc.close()
    over_http = GatewayClient(stack.gateway_url, retries=0)
    record = play_gold(over_http, gold.task_id, stack)
    assert over_http.record(episode.id, stack.admin_token)["final_state"] == gold.final_state
    over_http.close()
    wanted = {episode.id, record["episode_id"]}
    finishes: dict[str, dict] = {}
    deadline = time.monotonic() + 30
    while len(finishes) < 2 and time.monotonic() < deadline:
        time.sleep(0.3)
        finishes = {
            s.attributes[sc.EPISODE_ID]: s.attributes
            for s in load_spans(Path(stack.logs).parent / "traces").spans
            if s.attributes.get(sc.GATEWAY_OP) == sc.OP_FINISH
            and s.attributes.get(sc.EPISODE_ID) in wanted
        }
    assert set(finishes) == wanted
    for attributes in finishes.values():
        assert orjson.loads(attributes[sc.FINAL_STATE]) == gold.final_state
        assert sc.FINAL_STATE_TRUNCATED not in attributes
        assert sc.FINAL_STATE_ERROR not in attributes


def test_qualified_names_are_valid_function_names_and_only_where_names_collide() -> None:
    assert ToolRef("crm", "get_account").qualified == "crm__get_account"
    odd = ToolRef("sop_bench/" + "very_long_benchmark_name" * 3, "lookup.record")
    assert len(odd.qualified) == 64 and odd.qualified.replace("_", "").replace("-", "").isalnum()
    assert odd.qualified != ToolRef(odd.domain + "x", odd.tool).qualified

    def service(domain: str, tools: list[str], stateful: bool = False) -> ServiceEntry:
        return ServiceEntry(domain, "", "127.0.0.1", 1, {t: {"name": t} for t in tools},
                            stateful=stateful)  # fmt: skip

    catalog = Catalog([service("a", ["lookup", "act"]), service("b", ["find", "act"]),
                       service("c", ["find", "other"]), service("d", ["write"], True)])  # fmt: skip
    routes, distractors = catalog.episode_tools("a", "t-1", 10)
    assert routes == {
        "act": ToolRef("a", "act"), "b__act": ToolRef("b", "act"),
        "b__find": ToolRef("b", "find"), "c__find": ToolRef("c", "find"),
        "lookup": ToolRef("a", "lookup"), "other": ToolRef("c", "other")}
    assert distractors == {"b__act", "b__find", "c__find", "other"}
    assert catalog.spec(ToolRef("b", "act"), "b__act")["openai"]["function"]["name"] == "b__act"


def test_an_episode_store_is_per_episode_and_its_snapshot_is_the_final_state() -> None:
    """The object form of state (a pack's ``episode_store``): a fresh store per context, the
    final state its snapshot; a pack may not have both forms."""
    from dataclasses import replace

    from sopgym.core.registry import load_domain

    data = ledger()
    task = data.tasks[0]

    class Store:
        def __init__(self) -> None:
            self.rows: list[int] = []

        def snapshot(self) -> dict:
            return {"rows": list(self.rows)}

    with pytest.raises(ValueError, match="not both"):
        replace(load_domain("ledger"), episode_store=lambda tables, t: Store())
    pack = replace(load_domain("ledger"), initial_state=None,
                   episode_store=lambda tables, t: Store())  # fmt: skip
    first, second = (pack.context(data.tables, data.files_dir, task) for _ in range(2))
    assert first.store is not second.store and first.state is None
    first.store.rows.append(1)  # type: ignore[union-attr]
    assert (first.final_state(), second.final_state()) == ({"rows": [1]}, {"rows": []})
    with pytest.raises(ValueError, match="needs its task"):
        pack.context(data.tables, data.files_dir)

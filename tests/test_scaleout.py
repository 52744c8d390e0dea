"""Scale-out with real processes: gateway replicas behind HAProxy and tool-service replicas.

Episodes opened through the proxy spread over the replicas, every later request of an episode
reaches the replica that holds it (the other replica has never heard of it), a stateful
domain's final states are those of a single-replica stack, and a replica's loss fails only
its own episodes, as infrastructure errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from sopgym.agents import make_agent
from sopgym.agents.oracle import load_replays
from sopgym.agents.worker import run_job
from sopgym.client import GatewayClient, InfraError, connect
from sopgym.client.over_mcp import STATELESS, McpGatewayClient
from sopgym.core.outcomes import INFRA_ERROR
from sopgym.orchestration.replicas import ReplicatedStack, haproxy_binary, replicated_stack
from sopgym.orchestration.stack import embedded_stack
from sopgym.types import JSON

pytestmark = [
    pytest.mark.slow,
    # .ci/run installs HAProxy and stops when it cannot, so CI never skips these
    pytest.mark.skipif(haproxy_binary() is None, reason="HAProxy absent (apt-get install haproxy)"),
]
DOMAIN = "banking/loans"  # stateful: each episode's state lives in one tool-service replica
EPISODES = 16


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicatedStack]:
    logs = tmp_path_factory.mktemp("replicated")
    with replicated_stack([DOMAIN], logs, gateways=2, tool_replicas=2, grpc=True) as stack:
        yield stack


def _oracle_run(url: str, tasks: list[JSON], clients: int) -> dict[str, JSON]:
    """Each task's record, worked by the oracle from ``clients`` clients at once."""
    replays = load_replays([DOMAIN], None)
    agent = make_agent("oracle")

    def work(task: JSON) -> tuple[str, JSON]:
        client = GatewayClient(url)
        try:
            job = {"task": task, "replay": replays[(DOMAIN, task["id"])], "run_id": "scaleout"}
            report = run_job(agent, client, job, 60.0)
            assert report.status == "finished", report
            assert report.episode_id and isinstance(report.token, str)
            return task["id"], {**client.record(report.episode_id, report.token)}
        finally:
            client.close()

    with ThreadPoolExecutor(clients) as pool:
        return dict(pool.map(work, tasks))


def _open_count(url: str, path: str) -> int:
    return int(httpx.get(f"{url}{path}", timeout=5).json()["episodes"])


def test_episodes_spread_stay_on_their_replicas_and_match_one_replica(
    replicated: ReplicatedStack, tmp_path: Path
) -> None:
    client = GatewayClient(replicated.url)
    tasks = client.tasks(DOMAIN)[:EPISODES]
    client.close()
    records = _oracle_run(replicated.url, tasks, clients=4)
    with embedded_stack([DOMAIN], tmp_path / "single") as single:
        alone = _oracle_run(single.gateway_url, tasks, clients=1)
    assert {t: r["final_state"] for t, r in records.items()} == {
        t: r["final_state"] for t, r in alone.items()
    }
    assert all(r["final_state"] is not None and not r["close_errors"] for r in records.values())
    # every call of every episode went to one gateway replica: the other has no such episode
    held = [_open_count(url, "/healthz") for url in replicated.gateway_urls]
    assert sum(held) == EPISODES and min(held) > 0, held
    admin = {"authorization": f"Bearer {replicated.admin_token}"}
    for record in records.values():
        owners = [
            httpx.get(f"{url}/v1/episodes/{record['episode_id']}", headers=admin).status_code
            for url in replicated.gateway_urls
        ]
        assert sorted(owners) == [200, 404], owners


def test_one_clients_episodes_spread_over_gateway_and_tool_service_replicas(
    replicated: ReplicatedStack,
) -> None:
    client = GatewayClient(replicated.url)
    try:
        tasks = client.tasks(DOMAIN)[:EPISODES]
        episodes = [client.open(t["id"], DOMAIN) for t in tasks]
        # one client, one thread: its opens still spread (each on a new connection, which the
        # proxy balances as a Kubernetes Service does)
        assert {e.replica for e in episodes} == set(replicated.gateway_urls)
        open_at = [_open_count(url, "/readyz") for url in replicated.tool_urls[DOMAIN]]
        for episode in episodes:
            episode.finish({})
    finally:
        client.close()
    assert sum(open_at) == EPISODES and min(open_at) > 0, open_at


def test_grpc_episodes_follow_their_replica_too(replicated: ReplicatedStack) -> None:
    assert replicated.grpc_target is not None
    replays = load_replays([DOMAIN], None)
    seen = set()
    for task in GatewayClient(replicated.url).tasks(DOMAIN)[:4]:
        client = connect(replicated.grpc_target, "grpc")  # a new connection per client
        try:
            job = {"task": task, "replay": replays[(DOMAIN, task["id"])], "run_id": "grpc"}
            report = run_job(make_agent("oracle"), client, job, 60.0)
            assert report.status == "finished", report
            seen.add(report.replica)
            assert report.episode_id and isinstance(report.token, str)
            record = client.record(report.episode_id, report.token)
            assert record["finished"] and record["final_state"] is not None
        finally:
            client.close()
    assert seen == set(replicated.grpc_targets)  # spread by connection, followed by address


def test_losing_a_gateway_replica_fails_only_its_episodes_as_infra_errors(
    tmp_path: Path,
) -> None:
    with replicated_stack([DOMAIN], tmp_path, gateways=2, tool_replicas=1) as stack:
        client = GatewayClient(stack.url, retries=1, backoff=0.05)
        tasks = client.tasks(DOMAIN)[:6]
        episodes = [client.open(t["id"], DOMAIN) for t in tasks]
        lost_url = stack.gateway_urls[1]
        on_lost = {e.id for e in episodes if e.replica == lost_url}
        assert 0 < len(on_lost) < len(episodes)  # round robin put episodes on both
        stack.gateways[1].stop(grace=1.0)
        outcomes = {}
        for episode in episodes:
            try:
                episode.finish({})
                outcomes[episode.id] = "finished"
            except InfraError:
                outcomes[episode.id] = INFRA_ERROR
        assert {i for i, o in outcomes.items() if o == INFRA_ERROR} == on_lost
        # the proxy's health check drops the dead replica: new episodes open on the live one
        replays = load_replays([DOMAIN], None)
        job = {"task": tasks[0], "replay": replays[(DOMAIN, tasks[0]["id"])], "run_id": "after"}
        assert run_job(make_agent("oracle"), client, job, 60.0).status == "finished"
        client.close()


def test_stateless_mcp_episodes_follow_their_handle_across_replicas(
    replicated: ReplicatedStack,
) -> None:
    """MCP 2026-07-28 has no session to stick to: each episode opened through the proxy is
    worked at its handle's URL, the replica that opened it, so it needs no sticky routing."""
    replays = load_replays([DOMAIN], None)
    before = sum(_open_count(url, "/healthz") for url in replicated.gateway_urls)
    for task in GatewayClient(replicated.url).tasks(DOMAIN)[:4]:
        client = McpGatewayClient(replicated.url, retries=0, protocol=STATELESS)
        try:
            job = {"task": task, "replay": replays[(DOMAIN, task["id"])], "run_id": "mcp"}
            report = run_job(make_agent("oracle"), client, job, 60.0)
            assert report.status == "finished", report
        finally:
            client.close()
        admin = {"authorization": f"Bearer {replicated.admin_token}"}
        found = [
            httpx.get(f"{url}/v1/episodes/{report.episode_id}", headers=admin)
            for url in replicated.gateway_urls
        ]
        assert sorted(r.status_code for r in found) == [200, 404]  # one replica held it all
        record = next(r.json() for r in found if r.status_code == 200)
        assert record["finished"] and record["final_state"] is not None
    held = [_open_count(url, "/healthz") for url in replicated.gateway_urls]
    assert sum(held) - before == 4 and min(held) > 0, held

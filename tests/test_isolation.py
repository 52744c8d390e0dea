"""200 concurrent episodes across domains, each identical to the same task run alone.

One embedded stack (real processes: tool services, the user simulator, the gateway) serves
stateless and stateful domains, a dialogue one among them. Every task is first played alone,
one episode at a time; then four copies of every task are played at once, 200 episodes
started together from 200 threads. Each concurrent episode must match its task's lone run
call by call (tool, arguments, status, error code, result), in its conversation, its answer,
its final state and its score: no state, answer or turn leaks between episodes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from sopgym.agents.base import AgentContext
from sopgym.agents.oracle import OracleAgent, replay_of
from sopgym.client import GatewayClient
from sopgym.core.registry import load_domain
from sopgym.core.tasks import Task
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.orchestration.stack import Stack, embedded_stack
from tests.helpers import DATA_ROOT, domain_data

# stateful: ledger (per-task book), banking (SQLite per episode); stateless: crm,
# patient_intake; a dialogue with a simulated user: helpdesk
DOMAINS = ["ledger", "banking/account_management", "crm", "patient_intake", "helpdesk"]
TASKS_PER_DOMAIN = 10
COPIES = 4  # 5 domains x 10 tasks x 4 copies = 200 episodes at once


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with embedded_stack(DOMAINS, tmp_path_factory.mktemp("isolation"), DATA_ROOT) as running:
        yield running


def play(stack: Stack, task: Task) -> dict:
    """One oracle episode of ``task``, and what it left: the gateway's record of it, scored,
    without the ids and timings that differ between any two episodes."""
    client = GatewayClient(stack.gateway_url)
    try:
        episode = client.open(task.id, task.domain)
        data = domain_data(task.domain)
        context = AgentContext(replay=replay_of(data.gold[task.id]))
        episode.finish(OracleAgent().solve(task, episode, context))
        record = client.record(episode.id, stack.admin_token)
    finally:
        client.close()
    trajectory = Trajectory.from_json(record)
    score = score_episode(load_domain(task.domain), task, trajectory, data.gold[task.id])
    played = trajectory.to_json()
    for call in played["calls"]:
        call.pop("duration_ms")
    played.pop("episode_id")
    return {"episode": played, "score": score.to_json()}


def test_200_concurrent_episodes_each_match_the_task_run_alone(stack: Stack) -> None:
    tasks = [t for d in DOMAINS for t in domain_data(d).tasks[:TASKS_PER_DOMAIN]]
    alone = {t.id: play(stack, t) for t in tasks}
    assert all(a["score"]["success"] for a in alone.values())
    assert any(a["episode"]["final_state"] for a in alone.values()), "stateful ones hold state"
    assert any(a["episode"]["messages"] for a in alone.values()), "the dialogue talked"

    copies = [t for t in tasks for _ in range(COPIES)]
    start = threading.Barrier(len(copies))
    results: dict[int, dict] = {}
    failures: list[BaseException] = []

    def run(index: int, task: Task) -> None:
        try:
            start.wait(60)
            results[index] = play(stack, task)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=item) for item in enumerate(copies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures[:3]
    assert len(results) == len(copies) == 200
    for index, task in enumerate(copies):
        assert results[index] == alone[task.id], f"copy {index} of {task.id} differs"


def test_the_comparison_sees_a_difference(stack: Stack) -> None:
    """The check above can fail: two different tasks of a stateful domain differ."""
    first, second = domain_data("ledger").tasks[:2]
    assert play(stack, first) != play(stack, second)

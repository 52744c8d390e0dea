"""The embedded stack's tool services in groups: one process per group, every domain in it
answering on its own, through the gateway, with its own data and episodes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sopgym.client import GatewayClient
from sopgym.core.access import SECRET_HEADER
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scoring import score_episode
from sopgym.orchestration.stack import embedded_stack, split_groups
from tests.helpers import DATA_ROOT, domain_data

TOOLED = ["ledger", "crm", "patient_intake"]  # ledger is stateful, the others are not
TOOL_FREE = "triage"  # the gateway serves it itself


def test_domains_split_into_even_runs_in_order() -> None:
    names = ["a", "b", "c", "d", "e"]
    assert split_groups(names, 1) == [names]
    assert split_groups(names, 2) == [["a", "b", "c"], ["d", "e"]]
    assert split_groups(names, 9) == [[n] for n in names]
    assert split_groups([], 3) == []


def replay_gold(client: GatewayClient, admin_token: str, domain: str) -> dict:
    """Play a task's gold calls through the gateway; the episode's record."""
    data = domain_data(domain)
    gold = data.gold[data.tasks[0].id]
    episode = client.open(data.tasks[0].id, domain)
    for call in gold.calls:
        result = episode.call(call.name, call.arguments)
        assert result.ok, (domain, call.name, result.body)
    episode.finish(gold.outputs)
    return client.record(episode.id, admin_token)


@pytest.mark.parametrize("groups", [1, 2])
def test_one_process_per_group_and_every_domain_answers_through_it(
    groups: int, tmp_path: Path
) -> None:
    for name in [*TOOLED, TOOL_FREE]:
        domain_data(name)
    with embedded_stack([*TOOLED, TOOL_FREE], tmp_path / "logs", DATA_ROOT,
                        service_groups=groups) as stack:  # fmt: skip
        processes = [c for c in stack.group.children if c.name.startswith("tools-")]
        assert len(processes) == groups
        assert all(p.popen.poll() is None for p in processes)
        ports = {httpx.URL(url).port for url in stack.services.values()}
        assert len(ports) == groups, stack.services
        assert sorted(stack.services) == sorted(TOOLED) and stack.local_domains == [TOOL_FREE]
        secret = {SECRET_HEADER.decode(): stack.service_secret}
        for domain, url in stack.services.items():  # each mount is that domain's own service
            assert httpx.get(f"{url}/readyz").json()["domain"] == domain
            assert httpx.get(f"{url}/v1/tools").json()["domain"] == domain
            tasks = httpx.get(f"{url}/v1/tasks").json()["tasks"]
            assert [t["id"] for t in tasks] == [t.id for t in domain_data(domain).tasks]
        crm = stack.services["crm"]
        unknown = httpx.post(f"{crm}/v1/tools/get_patient_record", json={}, headers=secret)
        assert unknown.json()["error"]["code"] == "unknown_tool", "patient_intake's tool"
        if groups == 1:  # a path naming no domain of the group: a structured 404
            missing = httpx.get(crm.replace("/domains/crm", "/domains/nope") + "/v1/tools")
            assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")

        client = GatewayClient(stack.gateway_url, retries=0)
        try:
            for domain in TOOLED:  # every domain answers through the gateway, scored right
                record = replay_gold(client, stack.admin_token, domain)
                data = domain_data(domain)
                task = data.tasks[0]
                score = score_episode(
                    data.domain, task, Trajectory.from_json(record), data.gold[task.id]
                )
                assert score.success, (domain, record)
            answer_only = domain_data(TOOL_FREE).tasks[0].id
            episode = client.open(answer_only, TOOL_FREE)
            episode.finish(domain_data(TOOL_FREE).gold[answer_only].outputs)
            assert client.record(episode.id, stack.admin_token)["outputs"]
            # a ledger episode lives in ledger's registry only, though crm shares the process
            open_ledger = client.open(domain_data("ledger").tasks[1].id, "ledger")
            readyz = {d: httpx.get(f"{u}/readyz").json() for d, u in stack.services.items()}
            assert readyz["ledger"]["episodes"] == 1
            assert readyz["crm"]["episodes"] == readyz["patient_intake"]["episodes"] == 0
            open_ledger.finish({"outcome": "rejected"})
        finally:
            client.close()

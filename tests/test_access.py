"""Access control between the parts, over real processes: tool services answer only the
gateway, episodes open on listed tasks only, what an episode keeps is bounded, and no agent
job says where gold lives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from sopgym.client import GatewayClient
from sopgym.core.access import SECRET_HEADER
from sopgym.core.jsonio import dumps
from sopgym.gateway.core import MAX_META_BYTES, MAX_STORED_ARGUMENTS
from sopgym.orchestration.runner import Runner
from sopgym.orchestration.stack import Stack, embedded_stack
from sopgym.runs.records import RunConfig
from tests.helpers import DATA_ROOT, domain_data, task_id

DOMAIN = "customer_service"  # stateless: its service once took calls outside any episode
EPISODE = "x-sopgym-episode"
SPEED = "estimate_plan_speed"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    domain_data(DOMAIN)
    with embedded_stack([DOMAIN], tmp_path_factory.mktemp("logs"), DATA_ROOT) as running:
        yield running


@pytest.fixture
def client(stack: Stack) -> Iterator[GatewayClient]:
    gateway = GatewayClient(stack.gateway_url, retries=0)
    yield gateway
    gateway.close()


def test_tool_services_answer_only_the_gateway(stack: Stack, client: GatewayClient) -> None:
    service = stack.services[DOMAIN]
    episode = client.open(task_id(DOMAIN, 0), DOMAIN, distractors=4)
    call, args = f"{service}/v1/tools/{SPEED}", {"plan_name": "Fiber 500"}
    secret = SECRET_HEADER.decode()
    asked = {
        "no secret": httpx.post(call, json=args),
        "a forged episode": httpx.post(call, json=args, headers={EPISODE: episode.id}),
        "a wrong secret": httpx.post(call, json=args, headers={secret: "guess"}),
        "an episode registration": httpx.post(
            f"{service}/v1/episodes", json={"episode_id": "ep-x", "task_id": "x"}
        ),
        "an episode close": httpx.delete(f"{service}/v1/episodes/{episode.id}"),
    }
    answers = {why: (r.status_code, r.json()["error"]["code"]) for why, r in asked.items()}
    assert answers == {
        "no secret": (401, "unauthorized"),
        "a forged episode": (401, "unauthorized"),
        "a wrong secret": (403, "forbidden"),
        "an episode registration": (401, "unauthorized"),
        "an episode close": (401, "unauthorized"),
    }
    right = httpx.post(call, json=args, headers={secret: stack.service_secret})
    assert right.status_code == 200, "the gateway's secret is taken"
    assert httpx.get(f"{service}/v1/tasks").status_code == 200, "task inputs stay public"
    through = episode.call(SPEED, args)  # the gateway sends the secret itself
    assert through.ok and through.content == {"advertised_mbps": 500, "typical_evening_mbps": 400}


def test_a_huge_integer_argument_is_answered_not_a_500(client: GatewayClient) -> None:
    episode = client.open(task_id(DOMAIN, 1), DOMAIN, distractors=4)
    assert SPEED in {t["name"] for t in episode.tools}
    result = episode.call(SPEED, {"plan_name": "Fiber 99999999999999999999999"})
    assert result.status == 200, result.body
    assert result.content["advertised_mbps"] == pytest.approx(1e23)  # JSON: as a client reads it
    digits = episode.call(SPEED, {"plan_name": "Fiber " + "9" * 5000})  # past int()'s limit
    assert (digits.status, digits.body["error"]["code"]) == (422, "invalid_value")


def test_episodes_open_on_listed_tasks_only_with_bounded_meta(stack: Stack) -> None:
    opening = f"{stack.gateway_url}/v1/episodes"
    unknown = httpx.post(opening, json={"domain": DOMAIN, "task_id": "no-such-task"})
    assert unknown.status_code == 404
    assert unknown.json()["error"] == {
        "code": "not_found", "message": f"no task 'no-such-task' in {DOMAIN}", "field": "task_id"
    }  # fmt: skip
    big = {"note": "x" * MAX_META_BYTES}
    refused = httpx.post(opening, json={"domain": DOMAIN, "task_id": task_id(DOMAIN, 0),
                                        "meta": big})  # fmt: skip
    assert (refused.status_code, refused.json()["error"]["field"]) == (422, "meta")
    small = httpx.post(opening, json={"domain": DOMAIN, "task_id": task_id(DOMAIN, 0),
                                      "meta": {"note": "x" * 100}})  # fmt: skip
    assert small.status_code == 201


def test_huge_arguments_are_recorded_as_a_marker(stack: Stack, client: GatewayClient) -> None:
    episode = client.open(task_id(DOMAIN, 2), DOMAIN, distractors=4)
    huge = {"plan_name": "Fiber " + "1" * MAX_STORED_ARGUMENTS}
    assert episode.call(SPEED, huge).status == 422  # too many digits for the tool
    garbage = b"{" * (MAX_STORED_ARGUMENTS + 10)
    answer = httpx.post(f"{stack.gateway_url}/v1/episodes/{episode.id}/tools/{SPEED}",
                        content=garbage, headers={"authorization": f"Bearer {episode.token}"})
    assert answer.status_code == 400
    calls = client.record(episode.id, stack.admin_token)["calls"]
    for call, body in zip(calls, [dumps(huge), garbage], strict=True):
        assert call["arguments"]["truncated"] is True and call["arguments"]["bytes"] == len(body)
        assert len(orjson.dumps(call["arguments"])) < 1024


def test_no_job_says_where_gold_lives(tmp_path: Path) -> None:
    jobs = {}
    for agent in ("oracle", "fc"):
        runner = Runner(RunConfig([DOMAIN], agent=agent), tmp_path / agent, DATA_ROOT)
        task = runner.prepare()[0]
        jobs[agent] = runner.job(task, 0)
    gold = domain_data(DOMAIN).gold[jobs["fc"]["task"]["id"]]
    text = {agent: orjson.dumps(job).decode() for agent, job in jobs.items()}
    for agent, job in jobs.items():
        assert str(DATA_ROOT) not in text[agent] and "data_dir" not in job, agent
    assert "replay" not in jobs["fc"], "a model agent sees nothing of the gold"
    assert jobs["oracle"]["replay"]["calls"] == [c.to_json() for c in gold.calls]

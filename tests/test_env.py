"""sopgym.env: the Gymnasium environment (Gymnasium's own checker, oracle and random rollouts,
truncation, shaped penalties) and the same over HTTP (reset/step/state, many environments at
once, structured refusals), against a real gateway and tool service."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from gymnasium.utils.env_checker import check_env

from sopgym.env import SopgymEnv, make_env
from sopgym.orchestration.processes import ManagedProcess, free_port, sopgym_command
from sopgym.orchestration.stack import Stack, embedded_stack
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with embedded_stack([DOMAIN], tmp_path_factory.mktemp("env") / "logs", DATA_ROOT) as running:
        yield running


@pytest.fixture
def env(stack: Stack) -> Iterator[SopgymEnv]:
    environment = make_env(stack.gateway_url, DOMAIN, DATA_ROOT, distractors=2)
    yield environment
    environment.close()
    environment.client.close()


def oracle_actions(task_id: str) -> list[dict[str, Any]]:
    gold = domain_data(DOMAIN).gold[task_id]
    calls = [{"type": "tool", "name": c.name, "arguments": c.arguments} for c in gold.calls]
    return [*calls, {"type": "finish", "outputs": gold.outputs}]


def test_gymnasium_env_checker_passes(env: SopgymEnv) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*render modes.*")  # no spec: not registered
        check_env(env)


def test_oracle_rollouts_earn_1_and_random_ones_0(env: SopgymEnv) -> None:
    for seed in range(3):
        observation, info = env.reset(seed=seed)
        assert observation["task_id"] == info["task_id"] and observation["sop"]
        assert {t["name"] for t in observation["tools"]} and observation["output_schema"]
        rewards: list[float] = []
        done = False
        for action in oracle_actions(observation["task_id"]):
            assert not done
            observation, reward, done, truncated, info = env.step(action)
            assert not truncated
            rewards.append(float(reward))
        assert done and rewards[-1] == 1.0 and sum(rewards) == 1.0
        assert info["score"]["success"] and env.score == info["score"]
    for seed in range(3):
        env.reset(seed=100 + seed)
        env.action_space.seed(seed)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.action_space.sample())
            total, done = total + float(reward), terminated or truncated
        assert total == 0.0 and not info["score"]["success"]


def test_refusals_are_observed_and_long_episodes_truncate(stack: Stack) -> None:
    env = make_env(stack.gateway_url, DOMAIN, DATA_ROOT, max_steps=3, refusal_penalty=0.1)
    try:
        env.reset(options={"task_id": domain_data(DOMAIN).tasks[0].id})
        observation, reward, terminated, truncated, _ = env.step(
            {"type": "tool", "name": "score_lifestyle", "arguments": {}}
        )
        assert observation["content"]["error"]["code"] == "missing_argument"
        assert reward == -0.1 and not (terminated or truncated)  # the shaped penalty
        observation, reward, *_ = env.step({"type": "dance"})
        assert observation["content"]["error"]["field"] == "type" and reward == -0.1
        _, reward, terminated, truncated, info = env.step({"type": "message", "content": "hi"})
        assert truncated and not terminated and info["score"]["success"] is False
        with pytest.raises(RuntimeError):
            env.step({"type": "finish", "outputs": {}})
    finally:
        env.close()
        env.client.close()


# ---- over HTTP ----
@pytest.fixture(scope="module")
def env_server(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = sopgym_command("env-serve", "--gateway", stack.gateway_url, "--domain", DOMAIN,
                          "--port", str(port), "--data-root", str(DATA_ROOT))  # fmt: skip
    log = Path(tmp_path_factory.mktemp("env-server")) / "env.log"
    server = ManagedProcess("env-server", argv, log, ready_url=f"{url}/healthz")
    try:
        server.wait_ready(60)
        yield url
    finally:
        server.stop()


def test_many_environments_over_http(env_server: str) -> None:
    tasks = [t.id for t in domain_data(DOMAIN).tasks[:8]]

    def rollout(task_id: str) -> tuple[float, dict[str, Any]]:
        with httpx.Client(base_url=env_server, timeout=30) as client:
            opened = client.post("/reset", json={"domain": DOMAIN, "task_id": task_id}).json()
            assert opened["observation"]["task_id"] == task_id
            total = 0.0
            for action in oracle_actions(task_id):
                step = client.post("/step", json={"env_id": opened["env_id"], "action": action})
                total += step.json()["reward"]
            assert step.json()["done"] and step.json()["terminated"]
            return total, client.get(f"/state/{opened['env_id']}").json()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(rollout, tasks))
    assert [total for total, _ in results] == [1.0] * len(tasks)
    assert all(s["done"] and s["score"]["success"] and s["step_count"] > 1 for _, s in results)
    assert len({s["episode_id"] for _, s in results}) == len(tasks)


def test_http_refusals_are_structured(env_server: str) -> None:
    with httpx.Client(base_url=env_server, timeout=30) as client:
        missing = client.post("/step", json={"env_id": "env-nope", "action": {}})
        assert missing.status_code == 404 and missing.json()["error"]["field"] == "env_id"
        assert client.post("/reset", content=b"{not json").status_code == 400
        bad = client.post("/reset", json={"domain": "atlantis"})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "domain"
        opened = client.post("/reset", json={"domain": DOMAIN, "seed": 7}).json()
        again = client.post("/reset", json={"domain": DOMAIN, "seed": 7}).json()
        assert opened["observation"] == again["observation"]  # seeded: the same task
        action = client.post("/step", json={"env_id": opened["env_id"], "action": [1]})
        assert action.status_code == 422 and action.json()["error"]["field"] == "action"
        finish = {"type": "finish", "outputs": {}}
        done = client.post("/step", json={"env_id": opened["env_id"], "action": finish})
        assert done.json()["reward"] == 0.0 and done.json()["done"]
        late = client.post("/step", json={"env_id": opened["env_id"], "action": finish})
        assert late.status_code == 409 and late.json()["error"]["code"] == "episode_closed"
        closed = client.delete(f"/envs/{opened['env_id']}")
        assert (
            closed.json()["closed"] and client.get(f"/state/{opened['env_id']}").status_code == 404
        )

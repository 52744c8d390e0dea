"""``sopgym env-serve`` speaks OpenEnv's wire format at /openenv beside its own API: health,
metadata, schema, stateless HTTP reset/step/state naming the environment, MCP-shaped
``list_tools`` / ``call_tool`` actions, and a WebSocket session driven by OpenEnv's own client
(``openenv-core``) that works an oracle episode to reward 1.0."""

from __future__ import annotations

import httpx
import pytest

from sopgym.env import openenv
from sopgym.gateway import mcp_server
from tests.helpers import domain_data
from tests.test_env import DOMAIN, env_server, stack  # noqa: F401 (fixtures)


def call_actions(task_id: str) -> list[dict]:
    gold = domain_data(DOMAIN).gold[task_id]
    calls = [{"type": "call_tool", "tool_name": c.name, "arguments": c.arguments}
             for c in gold.calls]  # fmt: skip
    finish = {"type": "call_tool", "tool_name": openenv.FINISH_TOOL, "arguments": gold.outputs}
    return [*calls, finish]


def test_the_finish_tool_is_the_mcp_doors() -> None:
    assert openenv.FINISH_TOOL == mcp_server.FINISH_TOOL


def test_openenv_http_endpoints(env_server: str) -> None:  # noqa: F811
    base = f"{env_server}{openenv.PREFIX}"
    task_id = domain_data(DOMAIN).tasks[0].id
    with httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/health").json() == {"status": "healthy"}
        assert client.get("/metadata").json()["name"] == "sopgym"
        schema = client.get("/schema").json()
        assert set(schema) == {"action", "observation", "state"}
        reset = client.post("/reset", json={"seed": 3, "domain": DOMAIN, "task_id": task_id})
        body = reset.json()
        assert set(body) == {"observation", "reward", "done"} and body["done"] is False
        env_id = body["observation"]["env_id"]
        assert body["observation"]["task_id"] == task_id
        listed = client.post("/step", json={"env_id": env_id, "action": {"type": "list_tools"}})
        names = [t["name"] for t in listed.json()["observation"]["tools"]]
        assert names[-1] == openenv.FINISH_TOOL and len(names) > 1
        refused = client.post("/step", json={"env_id": env_id, "action": {
            "type": "call_tool", "tool_name": "validate_insurance", "arguments": {}}})  # fmt: skip
        error = refused.json()["observation"]["error"]
        assert error["error_type"] == "invalid_args" and "missing_argument" in error["message"]
        for action in call_actions(task_id):
            step = client.post("/step", json={"env_id": env_id, "action": action}).json()
        assert step["done"] is True and step["reward"] == 1.0
        state = client.get("/state", params={"env_id": env_id}).json()
        assert state["done"] and state["score"]["success"] and state["step_count"] > 1
        missing = client.post("/step", json={"env_id": "env-nope", "action": {"type": "x"}})
        assert missing.status_code == 404 and missing.json()["error"]["field"] == "env_id"


def test_openenvs_own_client_works_an_episode_over_its_websocket(
    env_server: str,  # noqa: F811
) -> None:
    generic = pytest.importorskip("openenv.core.generic_client")
    task_id = domain_data(DOMAIN).tasks[1].id
    with generic.GenericEnvClient(base_url=f"{env_server}{openenv.PREFIX}").sync() as env:
        first = env.reset(domain=DOMAIN, task_id=task_id)
        assert first.observation["task_id"] == task_id and not first.done
        tools = env.step({"type": "list_tools"}).observation["tools"]
        assert openenv.FINISH_TOOL in [t["name"] for t in tools]
        for action in call_actions(task_id):
            result = env.step(action)
        assert result.done and result.reward == 1.0
        state = env.state()
        assert state["score"]["success"] and state["episode_id"]
        again = env.reset(domain=DOMAIN, task_id=task_id)  # the session's next episode
        assert again.observation["episode_id"] != state["episode_id"]
        assert again.observation["env_id"] == state["env_id"]

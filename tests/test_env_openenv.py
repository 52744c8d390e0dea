"""``sopgym env-serve`` speaks OpenEnv's wire format at /openenv beside its own API: health,
metadata, schema, stateless HTTP reset/step/state naming the environment, MCP-shaped
``list_tools`` / ``call_tool`` actions, and a WebSocket session driven by OpenEnv's own client
(``openenv-core``) that works an oracle episode to reward 1.0."""

from __future__ import annotations

import json
import os
import subprocess

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


def _rpc(client: httpx.Client, path: str, method: str, **params: object) -> dict:
    message = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    answer = client.post(path, json=message)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 7
    return body


@pytest.mark.parametrize("path", ["/mcp", f"{openenv.PREFIX}/mcp"])
def test_openenvs_mcp_interface_works_an_episode(env_server: str, path: str) -> None:  # noqa: F811
    """OpenEnv's current agent interface: JSON-RPC at /mcp (and under /openenv, where its
    client's base URL points): a session, its tools, each gold call and the answer through
    ``finish_episode``, whose observation carries the episode's reward."""
    task_id = domain_data(DOMAIN).tasks[2].id
    with httpx.Client(base_url=env_server, timeout=30) as client:
        created = _rpc(client, path, "openenv/session/create", domain=DOMAIN, task_id=task_id)
        session = created["result"]["session_id"]
        tools = _rpc(client, path, "tools/list", session_id=session)["result"]["tools"]
        names = [t["name"] for t in tools]
        assert names[-1] == openenv.FINISH_TOOL and all("input_schema" in t for t in tools)
        refused = _rpc(client, path, "tools/call", session_id=session,
                       name="validate_insurance", arguments={})["result"]  # fmt: skip
        assert refused["error"]["error_type"] == "invalid_args" and refused["done"] is False
        for action in call_actions(task_id):
            name, arguments = action["tool_name"], action["arguments"]
            answer = _rpc(client, path, "tools/call", session_id=session, name=name,
                          arguments=arguments)  # fmt: skip
            result = answer["result"]
            assert result["tool_name"] == action["tool_name"] and result["error"] is None
        assert result["done"] is True and result["reward"] == 1.0
        again = _rpc(client, path, "tools/call", session_id=session, name=openenv.FINISH_TOOL,
                     arguments={})["error"]  # fmt: skip
        assert again["code"] == -32602 and again["data"]["code"] == "episode_closed"
        missing = _rpc(client, path, "tools/list")["error"]
        assert missing["code"] == -32602 and missing["data"]["field"] == "session_id"
        unknown = _rpc(client, path, "resources/list", session_id=session)["error"]
        assert unknown["code"] == -32601
        closed = _rpc(client, path, "openenv/session/close", session_id=session)["result"]
        assert closed == {"session_id": session, "closed": True}
        gone = _rpc(client, path, "tools/list", session_id=session)["error"]
        assert gone["data"]["code"] == "not_found"
        garbage = client.post(path, content=b"[1, 2")
        assert garbage.status_code == 200 and garbage.json()["error"]["code"] == -32700


# OpenEnv's MCP client (openenv 0.10) pins an MCP SDK sopgym's own cannot live beside (fastmcp
# 3 needs mcp 1.x; sopgym needs 2.3+), so it runs in an interpreter of its own: a venv with
# `pip install openenv==0.10.0`, named by SOPGYM_OPENENV_PYTHON.
OPENENV_PYTHON = os.environ.get("SOPGYM_OPENENV_PYTHON")
MCP_CLIENT_SCRIPT = """
import json, sys
from openenv.core.mcp_client import MCPToolClient
base, domain, task_id, calls = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
with MCPToolClient(base_url=base).sync() as env:
    first = env.reset(domain=domain, task_id=task_id)
    names = [t.name for t in env.list_tools()]
    results = [env.call_tool(c["tool_name"], **c["arguments"]) for c in calls]
# (the reset's observation holds the catalog, so the client reads it as a tool listing)
opened = first.observation.metadata["task_id"]
print(json.dumps({"task_id": opened, "names": names, "results": results}))
"""


@pytest.mark.skipif(not OPENENV_PYTHON, reason="set SOPGYM_OPENENV_PYTHON to a venv with openenv")
def test_openenvs_own_mcp_client_works_an_episode(env_server: str) -> None:  # noqa: F811
    task_id = domain_data(DOMAIN).tasks[3].id
    calls = call_actions(task_id)
    done = subprocess.run(
        [str(OPENENV_PYTHON), "-c", MCP_CLIENT_SCRIPT, f"{env_server}{openenv.PREFIX}", DOMAIN,
         task_id, json.dumps(calls)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["task_id"] == task_id and seen["names"][-1] == openenv.FINISH_TOOL
    assert all(r["error"] is None for r in seen["results"])
    assert seen["results"][-1]["done"] is True and seen["results"][-1]["reward"] == 1.0

"""Issue 41, point 8: an MCP 2026-07-28 episode handle is resolved through its episode and token,
never evicted by another client: 10,001 episodes opened by one client leave a victim's URL
working; a handle goes only with its episode (the core's store, bounded as for every door)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from sopgym.core.errors import ToolError
from sopgym.gateway import mcp_server
from sopgym.gateway.core import GatewayCore
from sopgym.gateway.episodes import EpisodeStore
from sopgym.gateway.mcp_server import DEFAULT_MAX_SESSIONS, McpDoor

DOMAIN, TASK = "crm", "crm-001"


class OneDomainCore:
    """The few parts of :class:`GatewayCore` the door's openings use, over a real store."""

    replica = None
    admin_token = None
    authorize = GatewayCore.authorize

    def __init__(self, keep: int = 100_000) -> None:
        self.episodes = EpisodeStore(keep)
        self.catalog = SimpleNamespace(services={DOMAIN: SimpleNamespace(kind="tool_use")})

    async def open(self, request: dict[str, Any], transport: str) -> dict[str, Any]:
        episode = self.episodes.open(request["task_id"], request["domain"], {}, set(), {})
        return {"episode_id": episode.id, "token": episode.token, "tools": []}

    async def tasks(self, domain: str) -> Any:
        return SimpleNamespace(tasks=[{"id": TASK}])

    def episode(self, episode_id: str) -> Any:
        return self.episodes.get(episode_id)


def _context(path: str) -> Any:
    url = SimpleNamespace(path=path, query="")
    return SimpleNamespace(request=SimpleNamespace(url=url, base_url="http://127.0.0.1:1/"))


async def _open(door: McpDoor) -> str:
    """An episode opened by its handle; the path of its URL."""
    result = await door._open_by_handle(_context(f"/mcp/{DOMAIN}/{TASK}"))
    url: str = result.structured_content["url"]
    return url.removeprefix("http://127.0.0.1:1")


def test_another_clients_openings_never_evict_a_live_handle() -> None:
    door = McpDoor(OneDomainCore())  # type: ignore[arg-type]

    async def attack() -> tuple[str, str]:
        victim = await _open(door)
        for _ in range(DEFAULT_MAX_SESSIONS + 1):  # the 10,001 episodes
            last = await _open(door)
        return victim, last

    victim, last = asyncio.run(attack())
    assert door._by_handle(victim).episode.id in victim
    assert door._by_handle(last).episode.id in last
    with pytest.raises(ToolError) as refused:  # the handle still needs its episode's token
        door._by_handle(victim.rsplit("/", 1)[0] + "/not-the-token")
    assert refused.value.code == "forbidden"


def test_a_handle_goes_with_its_episode_and_only_then(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_server, "DEFAULT_MAX_SESSIONS", 2)  # sweep past two handles
    core = OneDomainCore(keep=3)
    door = McpDoor(core)  # type: ignore[arg-type]

    async def open_five() -> list[str]:
        return [await _open(door) for _ in range(5)]

    paths = asyncio.run(open_five())
    with pytest.raises(ToolError) as gone:  # the core keeps three: the first two are gone
        door._by_handle(paths[0])
    assert gone.value.code == "not_found"
    assert all(door._by_handle(p) for p in paths[2:])
    assert len(door._handles) <= 2 * 3  # swept when doubled: at most twice what the core keeps
    door._forget_gone_handles()
    assert len(door._handles) == 3

"""Which tools exist, which service owns each, and which tools an episode may see."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from sopgym.types import JSON


@dataclass
class ServiceEntry:
    domain: str
    url: str
    host: str
    port: int
    tools: dict[str, JSON]  # own SOP tools, rendered specs
    distractors: dict[str, JSON] = field(default_factory=dict)
    sop: dict[str, str] = field(default_factory=dict)
    input_schema: JSON = field(default_factory=dict)
    output_schema: JSON = field(default_factory=dict)
    # a tool-free domain the gateway serves itself (gateway/local.py): its task inputs
    local_tasks: list[JSON] | None = None


class Catalog:
    """Every tool of every registered service, and the episode catalogs drawn from them."""

    def __init__(self, services: list[ServiceEntry]) -> None:
        self.services = {s.domain: s for s in services}
        self.owner: dict[str, ServiceEntry] = {}
        for service in services:
            for name in (*service.tools, *service.distractors):
                self.owner.setdefault(name, service)

    def spec(self, name: str) -> JSON:
        service = self.owner[name]
        return service.tools.get(name) or service.distractors[name]

    def episode_tools(
        self, domain: str, task_id: str, distractors: int
    ) -> tuple[list[str], set[str]]:
        """The domain's tools plus ``distractors`` others, drawn deterministically per task.

        The pool is the domain's own distractors first, then other domains' tools, so large
        catalogs (TELLER-Bench serves ~280 tools) are possible with real, callable tools.
        """
        service = self.services[domain]
        own = list(service.tools)
        pool = sorted(service.distractors, key=lambda n: _rank(task_id, n))
        foreign = [
            n
            for n in sorted(self.owner, key=lambda n: _rank(task_id, n))
            if n not in service.tools and n not in service.distractors
        ]
        chosen = (pool + foreign)[: max(0, distractors)]
        names = own + chosen
        names.sort(key=lambda n: _rank(task_id + "#order", n))  # needed tools are not first
        return names, set(chosen)


def _rank(seed: str, name: str) -> str:
    return hashlib.blake2b(f"{seed}|{name}".encode(), digest_size=8).hexdigest()


class DiscoveryError(RuntimeError):
    """A tool service did not answer its catalog in time, or answered as no tool service."""


def discover(
    urls: dict[str, str],
    wait_s: float = 30.0,
    on_wait: Callable[[str, str, str], None] | None = None,
) -> Catalog:
    """Fetch ``GET /v1/tools`` from each service, waiting up to ``wait_s`` for all to be
    ready (services and gateway may start together); ``on_wait(domain, url, why)`` hears of
    the first failed try of each."""
    entries = []
    deadline = time.monotonic() + wait_s
    with httpx.Client(timeout=5.0) as client:
        for domain, url in urls.items():
            body = _catalog(client, domain, url, deadline, on_wait)
            parts = urlsplit(url)
            entries.append(
                ServiceEntry(
                    domain=domain,
                    url=url,
                    host=parts.hostname or "127.0.0.1",
                    port=parts.port or 80,
                    tools={t["name"]: t for t in body["tools"]},
                    distractors={t["name"]: t for t in body.get("distractors", [])},
                    sop=body.get("sop", {}),
                    input_schema=body.get("input_schema", {}),
                    output_schema=body.get("output_schema", {}),
                )
            )
    return Catalog(entries)


def _catalog(
    client: httpx.Client,
    domain: str,
    url: str,
    deadline: float,
    on_wait: Callable[[str, str, str], None] | None,
) -> JSON:
    waited = False
    while True:
        try:
            response = client.get(f"{url}/v1/tools")
            if response.status_code < 500:  # a 5xx is a service still starting: try again
                break
            why = f"HTTP {response.status_code}"
        except httpx.HTTPError as error:
            why = str(error) or type(error).__name__
        if time.monotonic() > deadline:
            raise DiscoveryError(f"tool service {domain} at {url} not ready in time: {why}")
        if on_wait is not None and not waited:
            on_wait(domain, url, why)
        waited = True
        time.sleep(0.1)
    try:
        body = response.raise_for_status().json()
        if not isinstance(body.get("tools"), list):
            raise ValueError("no list of tools")
    except (httpx.HTTPStatusError, ValueError, AttributeError) as error:
        raise DiscoveryError(
            f"{url} answers GET /v1/tools as no sopgym tool service does: {error}"
        ) from None
    return body

"""Which tools exist, which service owns each, and which tools an episode may see.

A tool is known by its (domain, tool) pair: two domains may both have a ``get_account``, and
each call must reach the service of the one the episode was shown. An episode's catalog maps
each name shown to the agent to that pair; a foreign tool whose name another tool of the same
catalog also has is shown qualified, ``<domain>__<tool>``, so no shown name is ambiguous.
A stateful domain's tools are never another domain's distractors: they act on a state that
only a task of their own domain defines.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from sopgym.core.exceptions import InfrastructureError
from sopgym.core.tools import ToolSpec
from sopgym.types import JSON

MAX_TOOL_NAME = 64  # OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$
_NOT_IN_NAME = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True)
class ToolRef:
    """One tool of one domain: what a shown name routes to."""

    domain: str
    tool: str

    @property
    def qualified(self) -> str:
        """``<domain>__<tool>``, fit for function-calling APIs (long ones end in a digest)."""
        name = _NOT_IN_NAME.sub("_", f"{self.domain}__{self.tool}")
        if len(name) <= MAX_TOOL_NAME:
            return name
        digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
        return f"{name[: MAX_TOOL_NAME - 9]}_{digest}"


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
    kind: str = "tool_use"  # the domain's task kind (dialogue episodes talk to a user)
    stateful: bool = False
    # a tool-free domain the gateway serves itself (gateway/local.py): its task inputs
    local_tasks: list[JSON] | None = None
    # every replica's base URL when the service runs more than one (``url`` is the first):
    # each episode is pinned to one of them, which holds its state (docs/deploy.md)
    replicas: list[str] = field(default_factory=list)

    def replica_urls(self) -> list[str]:
        return self.replicas or [self.url]

    def replica_for(self, episode_id: str) -> str:
        """The replica that holds ``episode_id``: rendezvous hashing spreads episodes evenly
        and needs no shared state between gateway replicas."""
        urls = self.replica_urls()
        if len(urls) == 1:
            return urls[0]
        return max(urls, key=lambda url: _rank(episode_id, url))


class Catalog:
    """Every tool of every registered service, and the episode catalogs drawn from them."""

    def __init__(self, services: list[ServiceEntry]) -> None:
        self.services = {s.domain: s for s in services}
        self.refs = [
            ToolRef(s.domain, name) for s in services for name in (*s.tools, *s.distractors)
        ]
        self._qualified_specs: dict[ToolRef, JSON] = {}

    def spec(self, ref: ToolRef, shown: str) -> JSON:
        """The tool's rendered spec, under the name the episode shows it by."""
        service = self.services[ref.domain]
        spec = service.tools.get(ref.tool) or service.distractors[ref.tool]
        if shown == ref.tool:
            return spec
        renamed = self._qualified_specs.get(ref)
        if renamed is None:
            renamed = ToolSpec.from_neutral({**spec, "name": shown}).rendered()
            self._qualified_specs[ref] = renamed
        return renamed

    def episode_tools(
        self, domain: str, task_id: str, distractors: int, seed: int = 0
    ) -> tuple[dict[str, ToolRef], set[str]]:
        """The domain's tools plus ``distractors`` others, drawn deterministically per task
        (and run ``seed``, which salts the draw; 0 keeps the unsalted draw): each shown name
        and the tool it routes to, in catalog order (one order per domain and seed), and the
        distractors' shown names.

        The pool is the domain's own distractors first, then other domains' tools, so large
        catalogs (TELLER-Bench serves ~280 tools) are possible with real, callable tools.
        """
        if seed:
            task_id = f"{task_id}#{seed}"
        service = self.services[domain]
        own = [ToolRef(domain, n) for n in service.tools]
        pool = sorted(
            (ToolRef(domain, n) for n in service.distractors), key=lambda r: _rank(task_id, r.tool)
        )
        foreign = sorted(
            (r for r in self.refs if r.domain != domain and not self.services[r.domain].stateful),
            key=lambda r: _rank(task_id, r.qualified),
        )
        chosen = (pool + foreign)[: max(0, distractors)]
        taken = Counter(r.tool for r in own + chosen)
        shown = {
            (r.qualified if r.domain != domain and taken[r.tool] > 1 else r.tool): r
            for r in own + chosen
        }
        # One order per domain and run seed, not per task: the tools keep their places from
        # task to task, so the system prompt and catalog are a prefix that every task of the
        # domain shares (a model server's prompt cache, llama-server's among them, reuses it
        # instead of reprocessing the catalog on every first step). The order is a hash of
        # the names, so the SOP's own tools are not listed first, nor in the SOP's order.
        names = sorted(shown, key=lambda n: _rank(f"{domain}#{seed}#order", n))
        drawn = set(chosen)
        return {n: shown[n] for n in names}, {n for n in names if shown[n] in drawn}


def _rank(seed: str, name: str) -> str:
    return hashlib.blake2b(f"{seed}|{name}".encode(), digest_size=8).hexdigest()


class DiscoveryError(InfrastructureError, RuntimeError):
    """A tool service did not answer its catalog in time, or answered as no tool service."""


def discover(
    urls: dict[str, str | list[str]],
    wait_s: float = 30.0,
    on_wait: Callable[[str, str, str], None] | None = None,
) -> Catalog:
    """Fetch ``GET /v1/tools`` from each service, waiting up to ``wait_s`` for all to be
    ready (services and gateway may start together); ``on_wait(domain, url, why)`` hears of
    the first failed try of each. A service given as several URLs is one service's replicas:
    each must answer the same catalog."""
    entries = []
    deadline = time.monotonic() + wait_s
    with httpx.Client(timeout=5.0) as client:
        for domain, given in urls.items():
            replicas = [given] if isinstance(given, str) else given
            url = replicas[0]
            body = _catalog(client, domain, url, deadline, on_wait)
            for other in replicas[1:]:
                if _catalog(client, domain, other, deadline, on_wait)["tools"] != body["tools"]:
                    raise DiscoveryError(
                        f"tool service {domain}: replica {other} serves other tools than {url}"
                    )
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
                    kind=body.get("kind", "tool_use"),
                    stateful=body.get("stateful") is True,
                    replicas=replicas if len(replicas) > 1 else [],
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

"""sopgym's client SDK: the agent side of the episode API (open, call, message, finish,
record), the one client every agent uses, ours and anyone's.

``connect(address, transport)`` gives a :class:`GatewayClient` over HTTP (a keep-alive
connection per thread, :mod:`.keepalive`), gRPC (:mod:`.over_grpc`) or the
gateway's MCP door (:mod:`.over_mcp`); their episodes (:class:`Episode`) behave alike, so an
agent never knows which one it was given. docs/bring-your-own.md has a complete example.

Tool refusals (4xx) are returned, not raised: an agent shows them to its model as the tool's
result, exactly as a real API would answer. Transport failures, 429 and 502/503/504 are
retried with exponential backoff; when the retries are spent, or the gateway says a service is
down (``service_unavailable``) during an episode, or the gateway itself refuses connections
again after one retry, :class:`InfraError` ends the episode, so the run records an
infrastructure error instead of an agent mistake. Opening an episode and listing tasks retry
``service_unavailable`` too (a restarting service): they leave nothing in any episode's record,
where a tool call answered ``service_unavailable`` already makes its episode an
infrastructure error (the driver works such a task again in a fresh episode).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from opentelemetry.propagate import inject

from sopgym.client.retry import RetryPolicy
from sopgym.client.transports import TRANSPORTS as TRANSPORTS
from sopgym.client.transports import GatewayClientProtocol
from sopgym.client.transports import transport as transport_named
from sopgym.core.answers import MESSAGE_ACTION
from sopgym.core.errors import TOOL_FAILURES
from sopgym.core.exceptions import SopgymError
from sopgym.core.keepalive import HttpTransport, Reply, TransportError
from sopgym.core.outcomes import InfraFailure, observed
from sopgym.observability.genai import end_tool, tool_span
from sopgym.types import JSON

RETRY_STATUSES = frozenset({429, 502, 503, 504})
REFUSED_RETRIES = 1  # after a refused connection: a restarting gateway gets one more try
REMEMBERED_EPISODES = 10_000  # episodes whose replica a client remembers, for their records


class GatewayError(SopgymError, RuntimeError):
    """The gateway could not be reached, or refused to open/finish an episode."""


class InfraError(GatewayError, InfraFailure):
    """The infrastructure failed the episode (gateway unreachable, a service down, transient
    failures beyond the retry budget): no fault of the agent's."""


@dataclass
class ToolResult:
    status: int
    body: JSON

    @property
    def ok(self) -> bool:
        return self.status < 400

    @property
    def content(self) -> JSON:
        """What an agent should show its model: the result, or the structured error."""
        return self.body.get("result", self.body) if self.ok else self.body


_Client = TypeVar("_Client")


class Replicas(Generic[_Client]):
    """The gateway replicas a client's episodes live at. A replicated gateway answers an open
    with the address of the replica that holds the new episode (``replica``); every later
    request of that episode, its record included, goes there, whichever replica the shared
    address would have reached (docs/deploy.md, "Scaling out")."""

    def __init__(self, own: _Client, own_address: str, make: Callable[[str], _Client]) -> None:
        self._own, self._own_address, self._make = own, own_address, make
        self._clients: dict[str, _Client] = {}
        self._homes: OrderedDict[str, _Client] = OrderedDict()  # episode id -> its replica

    def home(self, episode_id: str, address: str | None) -> _Client:
        """The client for the replica at ``address`` (this client when none or its own),
        remembered as ``episode_id``'s."""
        client = self._own
        if address and address.rstrip("/") != self._own_address:
            if address not in self._clients:
                self._clients[address] = self._make(address)
            client = self._clients[address]
        self._homes[episode_id] = client
        while len(self._homes) > REMEMBERED_EPISODES:
            self._homes.popitem(last=False)
        return client

    def of(self, episode_id: str) -> _Client:
        return self._homes.get(episode_id, self._own)

    def others(self) -> list[_Client]:
        return list(self._clients.values())


class GatewayClient:
    def __init__(
        self, base_url: str, timeout: float = 30.0, retries: int = 4, backoff: float = 0.2
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = HttpTransport(self.base_url, timeout)
        self._policy = RetryPolicy(retries, backoff)
        self.replicas: Replicas[GatewayClient] = Replicas(
            self, self.base_url, lambda url: GatewayClient(url, timeout, retries, backoff)
        )

    def request(
        self,
        method: str,
        path: str,
        token: str | None = None,
        json: Any = None,
        retry_down: bool = False,
    ) -> Reply:
        """One request, retried as the module says; ``retry_down``: ``service_unavailable``
        is retried too (requests that record nothing in an episode)."""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        inject(headers)  # W3C trace context: the gateway's span joins the caller's trace
        for attempt in self._policy.attempts():
            try:
                response = self._http.request(method, path, headers, json)
            except TransportError as error:
                # a refused connection is a gateway that is down, not slow: one retry only
                down = isinstance(error, ConnectionRefusedError) and attempt >= REFUSED_RETRIES
                if down or self._policy.gives_up(attempt, None):
                    raise observed(
                        InfraError(f"gateway {self.base_url} unreachable: {error}")
                    ) from error
            else:
                code = _error_code(response) if response.status in RETRY_STATUSES else None
                if response.status not in RETRY_STATUSES or code in TOOL_FAILURES:
                    return response  # a tool that hung (504 tool_timeout) would hang again
                if self._policy.gives_up(attempt, code, retry_down):
                    raise observed(InfraError(
                        f"{method} {path}: {response.status} {code or 'no error code'} "
                        f"after {attempt + 1} attempt(s): {response.text[:200]}"
                    ))  # fmt: skip
        raise AssertionError("unreachable")

    def open(
        self,
        task_id: str,
        domain: str,
        *,
        distractors: int | None = None,
        sop_variant: str = "clean",
        meta: JSON | None = None,
    ) -> Episode:
        payload: JSON = {
            "task_id": task_id,
            "domain": domain,
            "sop_variant": sop_variant,
            "meta": meta or {},
        }
        if distractors is not None:
            payload["distractors"] = distractors
        response = self.request("POST", "/v1/episodes", json=payload, retry_down=True)
        if response.status != 201:
            raise GatewayError(f"cannot open episode: {response.status} {response.text}")
        opened = response.json()
        home = self.replicas.home(opened["episode_id"], (opened.get("replica") or {}).get("http"))
        if home is not self:  # replicated: the next open on a new connection, which the
            self._http.release()  # shared address's balancer may give another replica
        return Episode(home, opened)

    def record(self, episode_id: str, token: str, replica: str | None = None) -> JSON:
        """The episode's record, from the replica that holds it: the one this client opened
        it at, or ``replica`` (the address another client was given at open)."""
        home = self.replicas.home(episode_id, replica) if replica else self.replicas.of(episode_id)
        response = home.request("GET", f"/v1/episodes/{episode_id}", token=token)
        if response.status != 200:
            raise GatewayError(f"cannot read episode {episode_id}: {response.text}")
        return response.json()

    def tasks(self, domain: str) -> list[JSON]:
        """A domain's task inputs (never its gold): sharded workers take their tasks here."""
        response = self.request(
            "GET", f"/v1/tasks?domain={quote(domain, safe='')}", retry_down=True
        )
        if response.status != 200:
            raise GatewayError(f"cannot list tasks of {domain}: {response.text}")
        return response.json()["tasks"]

    def close(self) -> None:
        for replica in self.replicas.others():
            replica.close()
        self._http.close()


class Episode:
    """One open episode: its catalog, SOP and schemas, and the calls that act on it."""

    def __init__(self, client: GatewayClientProtocol, opened: JSON) -> None:
        self._client = client
        self.id: str = opened["episode_id"]
        self.token: str = opened["token"]
        self.tools: list[JSON] = opened["tools"]
        self.sop: str = opened.get("sop", "")
        self.input_schema: JSON = opened.get("input_schema", {})
        self.output_schema: JSON = opened.get("output_schema", {})

    @property
    def _http(self) -> GatewayClient:
        """The HTTP client the default calls, messages and finish go through; an episode of a
        transport with a client of its own (gRPC, MCP) overrides all three."""
        if not isinstance(self._client, GatewayClient):
            raise TypeError(f"{type(self).__name__} must override the calls of its transport")
        return self._client

    @property
    def replica(self) -> str:
        """The address of the gateway replica that holds this episode."""
        return self._client.base_url

    def call(self, name: str, arguments: Any, call_id: str | None = None) -> ToolResult:
        """Call a tool; ``call_id`` is the model's id for the call, if it gave one."""
        with tool_span(name, arguments, call_id) as span:
            status, body = self._call(name, arguments)
            end_tool(span, status, body)
        return ToolResult(status, body)

    def _call(self, name: str, arguments: Any) -> tuple[int, JSON]:
        """The transport's part of a call (gRPC episodes override it)."""
        path = f"/v1/episodes/{self.id}/tools/{quote(name, safe='')}"  # the model's name, as is
        response = self._http.request("POST", path, token=self.token, json=arguments)
        return response.status, _body(response)

    def message(self, content: Any) -> ToolResult:
        """Say ``content`` to a dialogue episode's simulated user: the result's content is
        ``{"reply", "done"}``, or the refusal (traced like a call of the built-in action)."""
        with tool_span(MESSAGE_ACTION, {"content": content}) as span:
            status, body = self._message(content)
            end_tool(span, status, body)
        return ToolResult(status, body)

    def _message(self, content: Any) -> tuple[int, JSON]:
        response = self._http.request(
            "POST", f"/v1/episodes/{self.id}/messages", token=self.token, json={"content": content}
        )
        return response.status, _body(response)

    def finish(self, outputs: JSON) -> None:
        response = self._http.request(
            "POST", f"/v1/episodes/{self.id}/finish", token=self.token, json={"outputs": outputs}
        )
        if response.status != 200:
            raise GatewayError(f"cannot finish episode {self.id}: {response.text}")


def _error_code(response: Reply) -> str | None:
    """The sopgym error code of a refusal, if its body carries one."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    return error.get("code") if isinstance(error, dict) else None


def _body(response: Reply) -> JSON:
    try:
        return response.json()
    except ValueError:
        return {"error": {"code": "invalid_response", "message": response.text[:200]}}


def connect(address: str, transport: str = "http", **options: Any) -> GatewayClientProtocol:
    """A gateway client for ``transport``, a name in :data:`TRANSPORTS`: ``http`` or ``mcp``
    (``address`` is the base URL) or ``grpc`` (``address`` is ``host:port`` or
    ``grpc://host:port``); all give the same episodes."""
    return transport_named(transport).connect(address, **options)

"""The gateway's transport-independent core: catalogs, episodes, validation, call records.

The HTTP adapter (:mod:`.app`) and the gRPC servicer (:mod:`.grpc_server`) both call these
methods, so the two transports share one episode store, one validation, one record of every
call and the same span annotations; they differ only in how a request arrives and how an
answer or a :class:`~sopgym.core.errors.ToolError` leaves. Every refusal is raised as a
``ToolError`` except a tool call's, which is recorded and returned (:class:`CallOutcome`) like
any other call.

Every episode is registered at the tool service of each domain it reaches, the first time it
does (its own at open), and closed at each when it finishes: the services hold stateful
episodes' state, and refuse calls for episodes they were never told of.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from sopgym.core.access import secret_line
from sopgym.core.errors import DOWN_CODE, ToolError
from sopgym.core.jsonio import dumps, loads_request
from sopgym.core.trajectory import CallRecord
from sopgym.gateway import conversations
from sopgym.gateway.catalog import Catalog, ServiceEntry
from sopgym.gateway.episodes import (
    DEFAULT_KEEP_BYTES,
    DEFAULT_KEEP_EPISODES,
    Episode,
    EpisodeStore,
)
from sopgym.gateway.faults import DROP, TIMEOUT_HOLD_S, FaultPlan
from sopgym.gateway.metrics import GatewayMetrics
from sopgym.gateway.upstream import UpstreamError, UpstreamPool
from sopgym.observability import episode_spans, tracing
from sopgym.types import JSON

# a tool service's answer for an episode it does not hold
LOST_CODE = "unknown_episode"


@dataclass
class CallOutcome:
    """A recorded tool call: the HTTP status and body to answer with, and for other
    transports the parsed result or the error."""

    status: int
    body: bytes | JSON  # the service's raw reply, or the gateway's own error body
    result: Any = None
    error: ToolError | None = None
    dropped: bool = False  # an injected fault: close the connection, answer nothing


# An episode lives in memory until evicted, so what an agent can make it hold is bounded: its
# ``meta`` is refused past MAX_META_BYTES, and a call's arguments past MAX_STORED_ARGUMENTS
# bytes are recorded as a marker with their size and head (the call itself still goes on).
MAX_META_BYTES = 4096
MAX_STORED_ARGUMENTS = 16 * 1024
TRUNCATED_HEAD = 256


@dataclass
class TaskList:
    payload: bytes  # the tool service's reply: {"domain", "tasks"}
    tasks: list[JSON]

    def __post_init__(self) -> None:
        self.ids = frozenset(t["id"] for t in self.tasks)  # episodes open on these only


class GatewayCore:
    def __init__(
        self,
        catalog: Catalog,
        default_distractors: int = 0,
        admin_token: str | None = None,
        metrics: GatewayMetrics | None = None,
        user_sim: str | None = None,
        seed: int = 0,
        faults: FaultPlan | None = None,
        service_secret: str | None = None,
        keep_episodes: int = DEFAULT_KEEP_EPISODES,
        replica: JSON | None = None,
        keep_bytes: int = DEFAULT_KEEP_BYTES,
    ) -> None:
        self.catalog = catalog
        # this replica's own addresses (``{"http": url, "grpc": target}``), returned at open
        # when the gateway runs replicated: the episode's later requests go there directly
        self.replica = replica
        self.faults = faults  # injected latency and failures (``--faults``), None: none
        self._secret_line = secret_line(service_secret)  # proves to services it is us
        self.users = conversations.UserSimLink(user_sim, self._secret_line) if user_sim else None
        self.seed = seed  # the run's seed: it salts each task's distractor draw
        self.default_distractors = default_distractors
        self.admin_token = admin_token
        self.episodes = EpisodeStore(keep_episodes, keep_bytes)
        self.metrics = metrics or GatewayMetrics()
        self._pools: dict[str, UpstreamPool] = {}
        self._tasks: dict[str, TaskList] = {}

    # ---- read-only views ----
    def health(self) -> JSON:
        return {"status": "ok", "episodes": len(self.episodes)}

    def catalog_summary(self) -> JSON:
        return {
            "domains": {
                name: {"tools": list(s.tools), "distractors": list(s.distractors)}
                for name, s in self.catalog.services.items()
            }
        }

    async def tasks(self, domain: str | None) -> TaskList:
        """A domain's task inputs, as its tool service lists them (never the gold)."""
        service = self.service(domain, "domain")
        listed = self._tasks.get(service.domain)
        if listed is None and service.local_tasks is not None:
            payload = dumps({"domain": service.domain, "tasks": service.local_tasks})
            listed = self._tasks[service.domain] = TaskList(payload, service.local_tasks)
        if listed is None:
            try:
                status, payload = await self._pool(service.url).get("/v1/tasks")
            except (UpstreamError, TimeoutError) as error:
                raise ToolError(
                    DOWN_CODE, f"tool service {service.domain} unreachable: {error}"
                ) from None
            if status != 200:
                raise ToolError(
                    "upstream_unavailable", f"tool service {service.domain} lists no tasks"
                )
            listed = self._tasks[service.domain] = TaskList(payload, orjson.loads(payload)["tasks"])
        return listed

    # ---- episodes ----
    async def open(self, request: JSON, transport: str) -> JSON:
        service = self.service(request.get("domain"), "domain")
        task_id = request.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            raise ToolError("missing_argument", "task_id is required", "task_id")
        count = request.get("distractors", self.default_distractors)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ToolError("invalid_value", "distractors must be an integer >= 0", "distractors")
        if service.local_tasks is not None:
            count = 0  # a tool-free domain's episode offers no tools at all
        routes, distractors = self.catalog.episode_tools(service.domain, task_id, count, self.seed)
        variant = request.get("sop_variant", "clean")
        if not isinstance(variant, str) or variant not in service.sop:
            raise ToolError(
                "invalid_value",
                f"no SOP variant {variant!r}; have: {', '.join(service.sop)}",
                "sop_variant",
            )
        if task_id not in (await self.tasks(service.domain)).ids:
            raise ToolError("not_found", f"no task {task_id!r} in {service.domain}", "task_id")
        meta = request.get("meta")
        if not isinstance(meta, dict):
            meta = {}
        if len(dumps(meta)) > MAX_META_BYTES:
            raise ToolError("invalid_value", f"meta is over {MAX_META_BYTES} bytes", "meta")
        episode = self.episodes.open(task_id, service.domain, routes, distractors, meta)
        try:
            await self._register(episode, service.domain)
        except ToolError:
            self.episodes.discard(episode.id)
            raise
        episode_spans.annotate_open(episode, variant)
        self.metrics.opened.add((service.domain, transport))
        opened = {
            "episode_id": episode.id,
            "token": episode.token,
            "sop": service.sop[variant],
            "input_schema": service.input_schema,
            "output_schema": service.output_schema,
            "tools": [self.catalog.spec(ref, name) for name, ref in routes.items()],
        }
        return {**opened, "replica": self.replica} if self.replica else opened

    def episode(self, episode_id: str) -> Episode:
        episode = self.episodes.get(episode_id)
        if episode is None:
            raise ToolError("unknown_episode", f"no episode {episode_id!r}")
        return episode

    def authorize(self, episode: Episode, token: str | None, admin_ok: bool = False) -> None:
        if token is None:
            raise ToolError("unauthorized", "missing bearer token")
        given = token.encode()  # compare_digest takes str only when it is ASCII
        if hmac.compare_digest(given, episode.token.encode()):
            return
        if admin_ok and self.admin_token and hmac.compare_digest(given, self.admin_token.encode()):
            return
        raise ToolError("forbidden", "token does not grant access to this episode")

    async def call_tool(
        self, episode: Episode, name: str, body: bytes, transport: str
    ) -> CallOutcome:
        """Forward one call to the tool's service and record it, whatever the answer."""
        if episode.finished:
            raise ToolError("episode_closed", "episode already finished")
        started = time.perf_counter()
        try:
            arguments: Any = loads_request(body, "tool arguments") if body else {}
        except ToolError as invalid:
            return self._refused(episode, name, _stored(body), started, invalid, transport)
        if len(body) > MAX_STORED_ARGUMENTS:
            arguments = _stored(body)
        ref = episode.routes.get(name)
        if ref is None:
            unknown = ToolError("unknown_tool", f"no tool named {name!r} in this episode's catalog")
            return self._refused(episode, name, arguments, started, unknown, transport, False)
        if self.faults is not None:
            fault = await self._inject(episode, name)
            if fault is not None:
                outcome = self._refused(episode, name, arguments, started, fault, transport)
                outcome.dropped = fault.code == DROP
                return outcome
        try:
            if ref.domain not in episode.services:  # a foreign distractor's first call
                await self._register(episode, ref.domain)
            status, payload, response = await self._upstream(
                ref.domain,
                self._episode_pool(episode, ref.domain).post(
                    f"/v1/tools/{ref.tool}",
                    body or b"{}",
                    b"x-sopgym-episode: "
                    + episode.id.encode()
                    + b"\r\n"
                    + tracing.traceparent_line(),
                ),
            )
        except ToolError as failure:
            return self._refused(episode, name, arguments, started, failure, transport)
        refused = _service_error(response) if status >= 400 else None
        if refused is not None and refused.code == LOST_CODE and ref.domain in episode.services:
            # registered there, yet unknown: the service restarted (or expired it) and lost the
            # episode's state; the infrastructure's failure, never a refusal the agent earned
            lost = ToolError(DOWN_CODE, f"tool service {ref.domain} lost the episode: {refused}")
            return self._refused(episode, name, arguments, started, lost, transport)
        result = response.get("result")
        self._record(
            episode,
            CallRecord(
                name=name,
                arguments=arguments,
                status=status,
                error_code=refused.code if refused else None,
                error_field=refused.field if refused else None,
                result=result,
                duration_ms=(time.perf_counter() - started) * 1000,
                distractor=name in episode.distractors,
                warnings=_warnings(response),
            ),
            transport,
        )
        return CallOutcome(status, payload, result, refused)

    async def finish(self, episode: Episode, request: JSON, transport: str) -> JSON:
        if episode.finished:
            raise ToolError("episode_closed", "episode already finished")
        outputs = request.get("outputs")
        if not isinstance(outputs, dict):
            raise ToolError("invalid_value", "outputs must be a JSON object", "outputs")
        episode.outputs = outputs
        episode.finished_at = time.time()  # from here on, calls are refused
        await asyncio.gather(*(self._close_at(episode, d) for d in sorted(episode.services)))
        episode_spans.annotate_finish(episode)
        self.metrics.finished.add((episode.domain, transport))
        answer = {"episode_id": episode.id, "finished": True, "calls": len(episode.calls)}
        self.episodes.finished(episode)  # its record kept compactly from here on
        return answer

    async def message(self, episode: Episode, request: JSON, transport: str) -> JSON:
        """Say the agent's message to the episode's simulated user; record both turns."""
        async with episode.talking:
            conversations.check_open(episode, self.catalog.services[episode.domain].kind)
            content = conversations.message_content(request)
            if self.users is None:
                raise ToolError("upstream_unavailable", "this gateway has no user simulator")
            reply, done = await self.users.reply(episode, content)
            conversations.record_exchange(episode, content, reply, done)
            episode_spans.annotate_message(episode)
        self.metrics.messages.add((episode.domain, transport))
        return {"reply": reply, "done": done}

    def record(self, episode: Episode) -> JSON:
        return episode.record()

    def close(self) -> None:
        if self.users is not None:
            self.users.close()
        for pool in self._pools.values():
            pool.close()

    async def _inject(self, episode: Episode, name: str) -> ToolError | None:
        """Apply the fault plan's draw for this call: wait out its latency; the fault to
        answer with, if one fell (a timeout holds the call first). Faulted calls are counted
        in the tool-call metric under their code."""
        assert self.faults is not None
        trial = episode.meta.get("trial", 0)
        trial = trial if isinstance(trial, int) and not isinstance(trial, bool) else 0
        draw = self.faults.draw(self.seed, episode.task_id, trial, len(episode.calls), name)
        hold = draw.delay + (TIMEOUT_HOLD_S if draw.code == "upstream_timeout" else 0.0)
        if hold > 0:
            await asyncio.sleep(hold)
        return None if draw.code is None else draw.error()

    # ---- the episode at its services ----
    async def _register(self, episode: Episode, domain: str) -> None:
        """Tell ``domain``'s service of the episode (a stateful one starts its state here);
        a tool-free domain the gateway serves itself has no service to tell."""
        if self.catalog.services[domain].local_tasks is not None:
            return
        body = orjson.dumps({"episode_id": episode.id, "task_id": episode.task_id})
        status, _, answer = await self._upstream(
            domain,
            self._episode_pool(episode, domain).post(
                "/v1/episodes", body, tracing.traceparent_line()
            ),
        )
        if status >= 400:
            raise _service_error(answer)
        episode.services.add(domain)

    async def _close_at(self, episode: Episode, domain: str) -> None:
        """Close the episode at ``domain``'s service, keeping the own domain's final state; a
        close that fails is recorded as such, never taken for an empty state."""
        try:
            status, _, answer = await self._upstream(
                domain,
                self._episode_pool(episode, domain).delete(
                    f"/v1/episodes/{episode.id}", tracing.traceparent_line()
                ),
            )
            if status >= 400:
                raise _service_error(answer)
        except ToolError as error:
            episode.close_errors[domain] = f"{error.code}: {error.message}"
            return
        if domain == episode.domain:
            episode.final_state = answer.get("final_state")

    async def _upstream(
        self, domain: str, sending: Awaitable[tuple[int, bytes]]
    ) -> tuple[int, bytes, JSON]:
        """One exchange with ``domain``'s service: the status, the raw reply and the reply
        parsed. A service unreachable is ``service_unavailable`` (503) at once: the agent stops
        its episode as an infrastructure error instead of retrying a dead service; one answering
        no JSON object is ``upstream_unavailable``."""
        try:
            status, payload = await sending
            answer = orjson.loads(payload)
        except (UpstreamError, TimeoutError) as error:
            raise ToolError(DOWN_CODE, f"tool service {domain} unreachable: {error}") from None
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            raise ToolError("upstream_unavailable", f"tool service {domain} sent a non-JSON reply")
        return status, payload, answer

    # ---- helpers ----
    def service(self, domain: Any, field: str) -> ServiceEntry:
        if not isinstance(domain, str) or domain not in self.catalog.services:
            known = ", ".join(sorted(self.catalog.services))
            raise ToolError("invalid_value", f"unknown domain {domain!r}; serving: {known}", field)
        return self.catalog.services[domain]

    def _episode_pool(self, episode: Episode, domain: str) -> UpstreamPool:
        """The connections to the replica of ``domain``'s service that holds ``episode``."""
        return self._pool(self.catalog.services[domain].replica_for(episode.id))

    def _pool(self, url: str) -> UpstreamPool:
        pool = self._pools.get(url)
        if pool is None:
            parts = urlsplit(url)  # a group's service is mounted below the root: /domains/...
            pool = self._pools[url] = UpstreamPool(
                parts.hostname or "127.0.0.1",
                parts.port or 80,
                headers=self._secret_line,
                base_path=parts.path,
            )
        return pool

    def _refused(
        self,
        episode: Episode,
        name: str,
        arguments: Any,
        started: float,
        error: ToolError,
        transport: str,
        in_catalog: bool = True,
    ) -> CallOutcome:
        """A call the gateway itself refused: recorded like any other."""
        self._record(
            episode,
            CallRecord(
                name=name,
                arguments=arguments,
                status=error.status,
                error_code=error.code,
                error_field=error.field,
                duration_ms=(time.perf_counter() - started) * 1000,
                in_catalog=in_catalog,
                distractor=name in episode.distractors,
            ),
            transport,
        )
        return CallOutcome(error.status, error.to_body(), None, error)

    def _record(self, episode: Episode, call: CallRecord, transport: str) -> None:
        """Record a call, put the same record on the request's span for the evaluator, and
        count it."""
        episode.calls.append(call)
        episode_spans.annotate_call(episode, len(episode.calls) - 1, call)
        self.metrics.call(
            episode.domain, call.error_code or "ok", transport, call.duration_ms / 1000
        )


def _stored(body: bytes) -> Any:
    """A body as a call record keeps it when it is no JSON or too large: the text, or past
    ``MAX_STORED_ARGUMENTS`` a marker with its size and head."""
    if len(body) <= MAX_STORED_ARGUMENTS:
        return body.decode(errors="replace")
    head = body[:TRUNCATED_HEAD].decode(errors="replace")
    return {"truncated": True, "bytes": len(body), "head": head}


def _warnings(answer: JSON) -> list[str]:
    """The warnings a tool service sent with a result (strings only: they are recorded)."""
    given = answer.get("warnings")
    if not isinstance(given, list):
        return []
    return [w[:TRUNCATED_HEAD] for w in given if isinstance(w, str)]


def _service_error(answer: JSON) -> ToolError:
    """A tool service's structured refusal, as the gateway passes it on."""
    refusal = answer.get("error")
    if not isinstance(refusal, dict) or not isinstance(refusal.get("code"), str):
        return ToolError("upstream_unavailable", "tool service refused with no sopgym error")
    return ToolError(refusal["code"], refusal.get("message", ""), refusal.get("field"))

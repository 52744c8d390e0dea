"""The gateway's gRPC transport for agents: the same client and episode interface as HTTP.

:class:`GrpcGatewayClient` and :class:`GrpcEpisode` are drop-in replacements for
:class:`~sopgym.client.GatewayClient` and :class:`~sopgym.client.Episode`:
agents cannot tell the transports apart. A refused call arrives as a gRPC status whose
trailing metadata carries the sopgym error (code, field, HTTP status); it is turned back into
the exact ``ToolResult`` the HTTP API would have produced. UNAVAILABLE, RESOURCE_EXHAUSTED and
DEADLINE_EXCEEDED (the HTTP client's transport errors, 502/503/429/504) are retried with the
same backoff.
"""

from __future__ import annotations

from typing import Any

import grpc
import orjson
from opentelemetry.propagate import inject

from sopgym.client import Episode, GatewayError, InfraError, Replicas
from sopgym.client.retry import RetryPolicy
from sopgym.core.errors import ToolError
from sopgym.core.outcomes import observed
from sopgym.proto import gateway_v1
from sopgym.types import JSON

RETRY_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    }
)
MAX_MESSAGE = 64 * 1024 * 1024  # catalogs of hundreds of tools, episode records


def grpc_target(address: str) -> str:
    """``grpc://host:port`` or ``host:port`` → the channel target ``host:port``."""
    target = address.removeprefix("grpc://").rstrip("/")
    if "://" in target:
        raise ValueError(f"not a gRPC address: {address!r} (use host:port or grpc://host:port)")
    return target


def trailing_metadata(error: grpc.RpcError) -> dict[str, str]:
    """A failed RPC's trailing metadata (the gateway's error code, field and HTTP status)."""
    # grpc-stubs types the items as objects with .key/.value; they are (key, value) tuples
    return dict(error.trailing_metadata() or ())  # type: ignore[arg-type]


def error_body(error: grpc.RpcError) -> tuple[int, JSON]:
    """The HTTP status and JSON error body equivalent to a failed RPC."""
    trailers = trailing_metadata(error)
    code = trailers.get("sopgym-error-code")
    if code is None:  # not the gateway's refusal: the channel's own failure
        code = "upstream_unavailable" if error.code() in RETRY_CODES else "internal_error"
        status = 503 if error.code() in RETRY_CODES else 500
    else:
        status = int(trailers.get("sopgym-http-status", 400))
    field = trailers.get("sopgym-error-field") or None
    return status, {"error": {"code": code, "message": error.details() or "", "field": field}}


class GrpcGatewayClient:
    """A synchronous client for the gateway's gRPC API (``sopgym.gateway.v1.Gateway``)."""

    def __init__(
        self, address: str, timeout: float = 30.0, retries: int = 4, backoff: float = 0.2
    ) -> None:
        self.pb2, stubs = gateway_v1()
        self.base_url = address
        self._channel = grpc.insecure_channel(
            grpc_target(address),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
            ],
        )
        self._stub = stubs.GatewayStub(self._channel)
        self._timeout, self._policy = timeout, RetryPolicy(retries, backoff)
        self.replicas: Replicas[GrpcGatewayClient] = Replicas(
            self,
            grpc_target(address),
            lambda target: GrpcGatewayClient(target, timeout, retries, backoff),
        )

    def invoke(
        self, method: str, request: Any, token: str | None = None, retry_down: bool = False
    ) -> Any:
        """Call ``method`` with retries; raises the :class:`grpc.RpcError` of a refusal, and
        :class:`InfraError` for a service down or transient failures beyond the retries
        (``retry_down``: a service down is retried too, as the HTTP client does)."""
        carrier: dict[str, str] = {"authorization": f"Bearer {token}"} if token else {}
        inject(carrier)  # W3C trace context: the gateway's span joins the caller's trace
        metadata = tuple(carrier.items())
        rpc = getattr(self._stub, method)
        for attempt in self._policy.attempts():
            try:
                return rpc(request, timeout=self._timeout, metadata=metadata)
            except grpc.RpcError as error:
                if error.code() not in RETRY_CODES:
                    raise
                code = trailing_metadata(error).get("sopgym-error-code")
                if self._policy.gives_up(attempt, code, retry_down):  # as HTTP does
                    raise observed(InfraError(
                        f"{method}: {error.code().name} {code or 'no error code'} after "
                        f"{attempt + 1} attempt(s): {error.details()}"
                    )) from error  # fmt: skip
        raise AssertionError("unreachable")

    def open(
        self,
        task_id: str,
        domain: str,
        *,
        distractors: int | None = None,
        sop_variant: str = "clean",
        meta: JSON | None = None,
    ) -> GrpcEpisode:
        request = self.pb2.OpenEpisodeRequest(
            task_id=task_id,
            domain=domain,
            sop_variant=sop_variant,
            meta_json=orjson.dumps(meta or {}),
        )
        if distractors is not None:
            request.distractors = distractors
        try:
            reply = self.invoke("OpenEpisode", request, retry_down=True)
        except grpc.RpcError as error:
            raise GatewayError(f"cannot open episode: {_describe(error)}") from None
        return GrpcEpisode(self.replicas.home(reply.episode_id, reply.replica_target), reply)

    def record(self, episode_id: str, token: str, replica: str | None = None) -> JSON:
        home = self.replicas.home(episode_id, replica) if replica else self.replicas.of(episode_id)
        try:
            reply = home.invoke(
                "GetEpisode", self.pb2.GetEpisodeRequest(episode_id=episode_id), token
            )
        except grpc.RpcError as error:
            raise GatewayError(f"cannot read episode {episode_id}: {_describe(error)}") from None
        return orjson.loads(reply.record_json)

    def tasks(self, domain: str) -> list[JSON]:
        try:
            reply = self.invoke(
                "ListTasks", self.pb2.ListTasksRequest(domain=domain), retry_down=True
            )
        except grpc.RpcError as error:
            raise GatewayError(f"cannot list tasks of {domain}: {_describe(error)}") from None
        return orjson.loads(reply.tasks_json)

    def catalog(self) -> JSON:
        reply = self.invoke("ListTools", self.pb2.ListToolsRequest())
        return {
            "domains": {
                d.domain: {"tools": list(d.tools), "distractors": list(d.distractors)}
                for d in reply.domains
            }
        }

    def close(self) -> None:
        for replica in self.replicas.others():
            replica.close()
        self._channel.close()


class GrpcEpisode(Episode):
    """An episode opened over gRPC; tool calls and the finish travel over gRPC too."""

    def __init__(self, client: GrpcGatewayClient, reply: Any) -> None:
        super().__init__(
            client,
            {
                "episode_id": reply.episode_id,
                "token": reply.token,
                "sop": reply.sop,
                "input_schema": orjson.loads(reply.input_schema_json or b"{}"),
                "output_schema": orjson.loads(reply.output_schema_json or b"{}"),
                "tools": [orjson.loads(t.spec_json) for t in reply.tools],
            },
        )
        self._grpc = client

    def _call(self, name: str, arguments: Any) -> tuple[int, JSON]:
        request = self._grpc.pb2.CallToolRequest(
            episode_id=self.id, tool=name, arguments_json=orjson.dumps(arguments)
        )
        try:
            reply = self._grpc.invoke("CallTool", request, self.token)
        except grpc.RpcError as error:
            return error_body(error)
        return reply.http_status or 200, {"result": orjson.loads(reply.result_json or b"null")}

    def _message(self, content: Any) -> tuple[int, JSON]:
        if not isinstance(content, str):  # the message field is a string: refused as HTTP is
            error = ToolError("type_mismatch", "content must be a string", "content")
            return error.status, error.to_body()
        request = self._grpc.pb2.SendMessageRequest(episode_id=self.id, content=content)
        try:
            reply = self._grpc.invoke("SendMessage", request, self.token)
        except grpc.RpcError as error:
            return error_body(error)
        return 200, {"reply": reply.reply, "done": reply.done}

    def finish(self, outputs: JSON) -> None:
        request = self._grpc.pb2.FinishEpisodeRequest(
            episode_id=self.id, outputs_json=orjson.dumps(outputs)
        )
        try:
            self._grpc.invoke("FinishEpisode", request, self.token)
        except grpc.RpcError as error:
            raise GatewayError(f"cannot finish episode {self.id}: {_describe(error)}") from None


def _describe(error: grpc.RpcError) -> str:
    status, body = error_body(error)
    return f"{status} {orjson.dumps(body).decode()}"

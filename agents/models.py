"""Model specs (``openai:<model>``, ``anthropic:<model>``, ``bedrock:<model-id>``,
``scripted[:profile]``), the LangChain chat model each one builds, and the preflight check.

The preflight runs once in the driving process before any task starts, so a missing key or an
unreachable endpoint is one clear line rather than a traceback per task. Provider packages
other than OpenAI's are optional (the ``providers`` extra) and imported only when used.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from sopgym.agents.model_http import KeepAliveTransport, keep_alive_mounts
from sopgym.core.exceptions import UsageError
from sopgym.core.keepalive import Answer
from sopgym.observability.genai import inject_trace_context, traced_http_client

PROVIDERS = ("scripted", "openai", "anthropic", "bedrock")
SCRIPTED = "scripted"
_EXTRA = "pip install 'sopgym[providers]'"
_PACKAGES = {"anthropic": "langchain_anthropic", "bedrock": "langchain_aws"}


class ModelUnavailable(UsageError, RuntimeError):
    """A model cannot be used: bad spec, missing key or package, unreachable endpoint."""


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    name: str  # what is sent to the API as the model name
    base_url: str | None = None

    @property
    def label(self) -> str:
        return self.name if self.provider == SCRIPTED else f"{self.provider}:{self.name}"

    @property
    def scripted(self) -> bool:
        return self.provider == SCRIPTED


def is_scripted(spec: str) -> bool:
    return spec == SCRIPTED or spec.startswith(SCRIPTED + ":")


def parse_model_spec(spec: str, base_url: str | None = None) -> ModelSpec:
    """``scripted[:profile]`` keeps the whole string as the model name: the scripted server
    reads its error profile from it."""
    spec = spec.strip()
    if is_scripted(spec):
        return ModelSpec(SCRIPTED, spec, base_url)
    provider, sep, name = spec.partition(":")
    if not sep or provider not in PROVIDERS or not name.strip():
        raise ModelUnavailable(
            f"bad model spec {spec!r}: use openai:<model>, anthropic:<model>, "
            "bedrock:<model-id> or scripted[:profile]"
        )
    return ModelSpec(provider, name.strip(), base_url)


def build_chat_model(
    spec: ModelSpec,
    temperature: float | None = 0.0,
    timeout: float = 120.0,
    max_tokens: int | None = None,
    record_tokens: bool = False,
):
    """The LangChain chat model for ``spec``. Retries are left to
    :func:`sopgym.agents.llm.invoke_model`, so every provider retries the same way.
    ``max_tokens`` caps every reply (None: the provider's default, Anthropic's 4096).
    ``record_tokens`` asks an OpenAI-compatible server for each turn's token ids and logprobs
    (:data:`TOKEN_REQUEST_FIELDS`, docs/tokens.md)."""
    if record_tokens:
        check_token_recording(spec)
    if spec.provider in (SCRIPTED, "openai"):
        from pydantic import SecretStr

        from sopgym.agents.chat_completions import ChatCompletionsModel

        if spec.scripted and not spec.base_url:
            raise ModelUnavailable("the scripted model needs the model server's base URL")
        key = os.environ.get("OPENAI_API_KEY") or ("scripted" if spec.scripted else "not-needed")
        options: dict[str, Any] = {}
        if spec.base_url:
            options["use_responses_api"] = False  # OpenAI-compatible servers speak Chat Completions
        if record_tokens:
            # in the body itself (LangChain warns against model_kwargs for non-OpenAI fields
            # because the SDK's typed ``create`` refuses them; PlainChatCompletions posts the
            # body as it is), so calls keep the plain transport's path, as extra_body would not
            options["logprobs"] = True
            options["model_kwargs"] = dict(TOKEN_REQUEST_FIELDS)
        mounts = keep_alive_mounts(spec.base_url)  # plain-HTTP endpoints: kept connections
        http_client = traced_http_client(timeout, mounts)  # W3C trace context to the server
        chat = ChatCompletionsModel(
            model=spec.name,
            base_url=spec.base_url,
            api_key=SecretStr(key),
            temperature=temperature,
            timeout=timeout,
            max_retries=0,
            max_completion_tokens=max_tokens,  # the field's wire name (max_tokens is deprecated)
            http_client=http_client,
            **options,
        )
        transport = next(iter(mounts.values()), None)
        chat.client = PlainChatCompletions(chat.root_client, http_client, transport)
        return chat
    module = _provider_module(spec.provider)
    if spec.provider == "anthropic":
        options = {"base_url": spec.base_url} if spec.base_url else {}
        return module.ChatAnthropic(
            model=spec.name,
            temperature=temperature,
            timeout=timeout,
            max_retries=0,
            max_tokens=max_tokens or 4096,
            **options,
        )
    from botocore.config import Config

    options = {"endpoint_url": spec.base_url} if spec.base_url else {}
    if max_tokens:
        options["max_tokens"] = max_tokens
    # boto3 fixes the read timeout per client; its own retries are off, as for the others
    config = Config(read_timeout=timeout, retries={"total_max_attempts": 1})
    return module.ChatBedrockConverse(
        model=spec.name, temperature=temperature, config=config, **options
    )


# vLLM's request fields for a turn's token ids (``prompt_token_ids`` at the top of the reply,
# ``token_ids`` in its choice); OpenAI's ``logprobs`` is sent beside them. With
# ``return_tokens_as_token_ids`` each logprob entry names its token as ``token_id:<id>``, so a
# token that is not valid UTF-8 on its own is still identified.
TOKEN_REQUEST_FIELDS = {"return_token_ids": True, "return_tokens_as_token_ids": True}


def openai_compatible(spec: ModelSpec) -> bool:
    """Whether ``spec`` is spoken to through Chat Completions on a server of our choosing: the
    scripted model, or ``openai:<model>`` with ``--base-url`` (vLLM, llama-server ...), where
    the server's own request fields (``seed``, vLLM's token fields) may be sent. Not OpenAI's
    own API, nor Anthropic or Bedrock."""
    return spec.scripted or (spec.provider == "openai" and spec.base_url is not None)


def check_token_recording(spec: ModelSpec) -> None:
    """:class:`ModelUnavailable` (a usage error, refused before a run starts) unless the
    model's server can be asked for token ids (:func:`openai_compatible`)."""
    if not openai_compatible(spec):
        raise ModelUnavailable(
            f"{spec.label}: --record-tokens needs an OpenAI-compatible server that returns "
            "token ids (vLLM, the scripted model), given with --base-url"
        )


# ``create``'s per-request keyword arguments → the low-level request options they become
_OPTIONS = {"extra_headers": "headers", "extra_query": "params", "extra_body": "extra_json",
            "timeout": "timeout"}  # fmt: skip


class PlainChatCompletions:
    """``chat.completions`` for ``ChatOpenAI``: LangChain's request body posted as it is.

    The SDK's ``create`` first walks the whole request (every message, every tool schema)
    against its typed parameter definitions, then turns the reply into typed objects that
    LangChain turns straight back into a dict: measured, ~10 ms of CPU per call on a 10-tool,
    8-step episode, a third of an agent worker's time against the scripted model. LangChain
    builds plain JSON, for which that walk changes nothing (a test holds the SDK to it), so
    the body goes out through the client's documented low-level ``post``: the same URL, auth
    headers, timeout and typed errors (``APIStatusError.status_code`` drives our retries).

    On plain-HTTP endpoints (the scripted model, local and in-cluster servers), given the
    ``transport`` the SDK's HTTP client mounts for them (:mod:`sopgym.agents.model_http`), even
    ``post`` is skipped, and with it the httpx client's own per-request work: copying the
    options model, rebuilding the same headers and URL, the auth-refresh and retry loops we
    switch off, then the client's header, hook and redirect handling cost ~0.4 ms a call
    (measured against the scripted model), a fifth of an agent step. The request handed to the
    transport is the one ``post`` sends through ``http_client``, headers and the W3C trace
    context included (a test holds the SDK to that), and failures become the SDK's typed
    errors: a status >= 400 through the SDK's own mapping, a timeout ``APITimeoutError``, any
    other transport failure ``APIConnectionError``. A request with other per-call options than
    a timeout goes through ``post``, as does every call to an ``https://`` endpoint.
    """

    def __init__(
        self,
        client: Any,
        http_client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._client = client
        self._transport = transport if http_client is not None else None
        self._url = httpx.URL(str(client.base_url).rstrip("/") + "/chat/completions")
        sent = {**(http_client.headers if http_client else {}), **client.auth_headers,
                **client.default_headers, "X-Stainless-Retry-Count": "0"}  # fmt: skip
        # header names are case-insensitive; the SDK leaves out its Omit()ted ones
        self._headers = {k.lower(): v for k, v in sent.items() if isinstance(v, str)}
        # On the kept-socket transport the request is written as bytes: the request line and
        # the headers every call sends, once (an ``httpx.Request`` per call rebuilt and checked
        # them: ~0.15 ms, a tenth of an agent step). Host and Content-Length as httpx writes them.
        self._head: bytes | None = None
        if isinstance(self._transport, KeepAliveTransport) and self._url.scheme == "http":
            fixed = {"host": self._url.netloc.decode("ascii"), **self._headers}
            if not any("\r" in v or "\n" in v for v in fixed.values()):  # else httpx refuses
                self._head = b"".join(
                    [b"POST %s HTTP/1.1\r\n" % self._url.raw_path]
                    + [f"{k}: {v}\r\n".encode("latin-1") for k, v in fixed.items()]
                )

    @property
    def with_raw_response(self) -> PlainChatCompletions:
        return self  # LangChain asks for the raw response; :class:`PlainReply` is one

    def create(self, **payload: Any) -> PlainReply:
        options = {_OPTIONS[k]: payload.pop(k) for k in list(payload) if k in _OPTIONS}
        if self._transport is None or options.keys() - {"timeout"}:
            response = self._client.post(
                "/chat/completions", cast_to=httpx.Response, body=payload, options=options
            )
            return PlainReply(response)
        return self._send(self._transport, payload, options.get("timeout"))

    def _send(
        self, transport: httpx.BaseTransport, payload: dict[str, Any], timeout: Any
    ) -> PlainReply:
        timeout = httpx.Timeout(self._client.timeout if timeout is None else timeout)
        headers = {**self._headers, "x-stainless-read-timeout": str(timeout.read)}
        inject_trace_context(headers)
        content = orjson.dumps(payload)

        def request() -> httpx.Request:
            return httpx.Request(
                "POST",
                self._url,
                content=content,
                headers=headers,
                extensions={"timeout": timeout.as_dict()},
            )

        try:
            if self._head is not None and isinstance(transport, KeepAliveTransport):
                varying = {k: v for k, v in headers.items() if k not in self._headers}
                data = b"".join(
                    [self._head]
                    + [f"{k}: {v}\r\n".encode("latin-1") for k, v in varying.items()]
                    + [b"content-length: %d\r\n\r\n" % len(content), content]
                )
                answer = transport.exchange(
                    self._url.host, self._url.port or 80, data, timeout.as_dict(), request
                )
                if answer.status < 400:
                    return PlainReply.from_answer(answer, request)
                response = httpx.Response(
                    answer.status, headers=answer.headers, content=b"".join(answer.body),
                    request=request(),
                )  # fmt: skip
            else:
                response = transport.handle_request(request())
                response.read()
        except httpx.RequestError as error:
            from openai import APIConnectionError, APITimeoutError

            if isinstance(error, httpx.TimeoutException):
                raise APITimeoutError(request=error.request) from error  # type: ignore[arg-type]
            raise APIConnectionError(request=error.request) from error  # type: ignore[arg-type]
        if response.status_code >= 400:
            raise self._client._make_status_error_from_response(response) from None
        return PlainReply(response)


class PlainReply:
    """The raw-response face LangChain reads: ``parse()``, ``headers``, ``http_response``
    (built only when asked for, as LangChain does on a failure)."""

    def __init__(self, response: httpx.Response | None = None) -> None:
        self._response = response
        self._body = b""
        self._request: Callable[[], httpx.Request] | None = None
        self._status = 200
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self.headers: Mapping[str, str] = response.headers if response is not None else {}

    @classmethod
    def from_answer(cls, answer: Answer, request: Callable[[], httpx.Request]) -> PlainReply:
        reply = cls()
        reply._body, reply._request = b"".join(answer.body), request
        reply._status, reply._raw_headers = answer.status, answer.headers
        reply.headers = AnswerHeaders(answer.headers)
        return reply

    @property
    def http_response(self) -> httpx.Response:
        if self._response is None:
            assert self._request is not None
            self._response = httpx.Response(
                self._status, headers=self._raw_headers, content=self._body,
                request=self._request(),
            )  # fmt: skip
        return self._response

    def parse(self) -> Any:
        body = self._body if self._response is None else self._response.content
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:  # LangChain reports a non-JSON body with its preview
            return body.decode("utf-8", "replace") if self._response is None else (
                self._response.text)  # fmt: skip
        return with_token_ids(with_server_timings(parsed))


class AnswerHeaders(dict[str, str]):
    """A reply's headers as a mapping that, like ``httpx.Headers``, ignores case; repeated
    names keep their last value (LangChain reads single-valued headers only)."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        super().__init__((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in raw)

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)


def with_token_ids(body: Any) -> Any:
    """vLLM's ``prompt_token_ids`` (top level) and the choice's ``token_ids`` carried inside
    ``usage``, as :func:`with_server_timings` carries ``timings``: LangChain keeps neither key
    (it keeps the choice's ``logprobs``), and the usage records read them from there."""
    if not isinstance(body, dict) or "prompt_token_ids" not in body:
        return body
    usage, choices = body.get("usage"), body.get("choices")
    if isinstance(usage, dict) and isinstance(choices, list) and choices:
        first = choices[0]
        completion = first.get("token_ids") if isinstance(first, dict) else None
        body["usage"] = {**usage, "prompt_token_ids": body["prompt_token_ids"],
                         "completion_token_ids": completion}  # fmt: skip
    return body


def with_server_timings(body: Any) -> Any:
    """llama-server's ``timings`` (its own prompt and generation times) carried inside
    ``usage``: LangChain keeps a reply's ``usage`` (as ``response_metadata["token_usage"]``)
    and drops other top-level keys, and the usage records read them from there."""
    if isinstance(body, dict) and isinstance(body.get("timings"), dict):
        usage = body.get("usage")
        if isinstance(usage, dict):
            body["usage"] = {**usage, "timings": body["timings"]}
    return body


def _provider_module(provider: str) -> Any:
    name = _PACKAGES[provider]
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ModelUnavailable(f"{provider} models need the {name} package: {_EXTRA}") from None


def preflight(spec: ModelSpec, timeout: float = 5.0) -> None:
    """Raise :class:`ModelUnavailable` (one line) unless ``spec`` can plausibly be called."""
    if spec.provider in (SCRIPTED, "openai"):
        key = os.environ.get("OPENAI_API_KEY")
        if not key and not spec.base_url:
            raise ModelUnavailable(
                f"{spec.label}: OPENAI_API_KEY is not set (or pass --base-url for an "
                "OpenAI-compatible server)"
            )
        base = spec.base_url or "https://api.openai.com/v1"
        headers = {"authorization": f"Bearer {key}"} if key and not spec.scripted else {}
        if spec.scripted:
            _probe(spec, base.rstrip("/") + "/models", headers, timeout)
        else:  # the name must be served there: a wrong URL or name is refused, not scored
            from sopgym.agents.model_check import check_openai_model

            check_openai_model(spec, base, headers, timeout)
    elif spec.provider == "anthropic":
        _require_package(spec.provider)
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ModelUnavailable(f"{spec.label}: ANTHROPIC_API_KEY is not set")
        base = spec.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        _probe(spec, base.rstrip("/") + "/v1/models", headers, timeout)
    elif spec.provider == "bedrock":
        _require_package(spec.provider)
        import boto3

        session = boto3.Session()
        if session.get_credentials() is None:
            raise ModelUnavailable(
                f"{spec.label}: no AWS credentials found (AWS_PROFILE or AWS_ACCESS_KEY_ID)"
            )
        if not session.region_name:
            raise ModelUnavailable(f"{spec.label}: no AWS region set (AWS_DEFAULT_REGION)")


def _require_package(provider: str) -> None:
    name = _PACKAGES[provider]
    if importlib.util.find_spec(name) is None:
        raise ModelUnavailable(f"{provider} models need the {name} package: {_EXTRA}")


def _probe(spec: ModelSpec, url: str, headers: dict[str, str], timeout: float) -> None:
    """Reachability and key check; any answer other than 401/403 counts as reachable."""
    from sopgym.agents.model_check import reach  # it imports this module

    reach(spec, url, headers, timeout)

"""The preflight's check that an OpenAI-compatible endpoint serves the run's model: it lists
the models (``GET {base}/models``) and finds the name, or else makes one real one-token chat
request. A base URL without its ``/v1``, or a model name the server does not have, is then
refused in one line before any task runs, instead of every task being scored as the agent's
failure."""

from __future__ import annotations

from typing import Any

import httpx

from sopgym.agents.models import ModelSpec, ModelUnavailable

LISTED = 8  # model ids named in a refusal


def check_openai_model(spec: ModelSpec, base: str, headers: dict[str, str], timeout: float) -> None:
    """Raise :class:`ModelUnavailable` (one line) unless ``base`` serves ``spec.name``."""
    base = base.rstrip("/")
    url = base + "/models"
    listing = reach(spec, url, headers, timeout)
    served = _model_ids(listing)
    if served is not None and spec.name in served:
        return
    # not listed (a server may accept names it does not list): one real request decides
    request = {"model": spec.name, "messages": [{"role": "user", "content": "Reply with OK."}],
               "max_tokens": 1}  # fmt: skip
    try:
        reply = httpx.post(base + "/chat/completions", json=request, headers=headers,
                           timeout=timeout)  # fmt: skip
    except httpx.HTTPError as error:
        reason = str(error) or type(error).__name__
        raise ModelUnavailable(
            f"{spec.label}: cannot reach {base}/chat/completions: {reason}"
        ) from None
    if reply.status_code < 400 or reply.status_code in (408, 429) or reply.status_code >= 500:
        return  # it answered, or is busy: the endpoint and the name are usable
    if reply.status_code in (401, 403):
        raise ModelUnavailable(
            f"{spec.label}: {base} rejected the credentials (HTTP {reply.status_code})"
        )
    if reply.status_code == 404 and listing.status_code == 404:
        raise ModelUnavailable(
            f"{spec.label}: {base} has neither /models nor /chat/completions (HTTP 404): "
            f"is --base-url the API root? OpenAI-compatible servers serve it at .../v1"
            + ("" if base.endswith("/v1") else f" (try {base}/v1)")
        )
    known = f" (it serves: {', '.join(served[:LISTED])})" if served else ""
    raise ModelUnavailable(
        f"{spec.label}: {base} refused model {spec.name!r} (HTTP {reply.status_code}: "
        f"{_message(reply)}){known}"
    )


def reach(spec: ModelSpec, url: str, headers: dict[str, str], timeout: float) -> httpx.Response:
    """GET ``url``: an endpoint that cannot be reached, or refuses the key, is
    :class:`ModelUnavailable`; any other answer is returned."""
    try:
        response = httpx.get(url, headers=headers, timeout=timeout)
    except httpx.HTTPError as error:
        reason = str(error) or type(error).__name__
        raise ModelUnavailable(f"{spec.label}: cannot reach {url}: {reason}") from None
    if response.status_code in (401, 403):
        raise ModelUnavailable(
            f"{spec.label}: {url} rejected the credentials (HTTP {response.status_code})"
        )
    return response


def _model_ids(response: httpx.Response) -> list[str] | None:
    """The ids of an OpenAI-style model list; None when the answer is not one."""
    if response.status_code != 200:
        return None
    try:
        body: Any = response.json()
    except ValueError:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]


def _message(response: httpx.Response) -> str:
    """The server's error message in one short line."""
    try:
        body: Any = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        text = error.get("message") if isinstance(error, dict) else (error or body)
    except ValueError:
        text = response.text
    line = " ".join(str(text).split())
    return line[:200] or response.reason_phrase

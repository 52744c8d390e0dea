"""OpenAPI 3.1 building blocks shared by the tool service's and the gateway's documents.

Both documents are written from what the servers really do, so that a fuzzer
(schemathesis, ``bench/fuzz.py``) can hold them to it: every status a route can answer is
listed, and every refusal has the one structured error body. OpenAPI 3.1 takes JSON Schema
2020-12 as it is, so a tool's argument schema goes into its request body unchanged.
"""

from __future__ import annotations

from sopgym.types import JSON

VERSION = "3.1.0"
ERROR_SCHEMA: JSON = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "field"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "field": {"type": ["string", "null"]},
            },
        }
    },
}
_WHY = {
    400: "malformed request (invalid_json, invalid_request, episode_required)",
    401: "missing credentials (unauthorized)",
    403: "credentials that do not grant access (forbidden)",
    404: "no such tool, task, episode or route",
    409: "the episode or conversation is over",
    413: "request body too large",
    422: "arguments that break the schema or a value the tool refuses",
    502: "a tool service or the user simulator cannot be reached (upstream_unavailable)",
    504: "the tool did not answer within the per-call limit (tool_timeout)",
}


def json_content(schema: JSON) -> JSON:
    return {"application/json": {"schema": schema}}


def operation(
    summary: str,
    answers: dict[int, JSON],
    refusals: tuple[int, ...] = (),
    body: JSON | None = None,
    **extra: object,
) -> JSON:
    """One operation: its successful ``answers`` (status -> JSON schema), its ``refusals``
    (each with the error body), and the JSON request ``body`` schema when it takes one."""
    responses: JSON = {
        str(status): {"description": "OK", "content": json_content(schema)}
        for status, schema in answers.items()
    }
    for status in refusals:
        refused = {"description": _WHY[status], "content": json_content(ERROR_SCHEMA)}
        responses[str(status)] = refused
    built: JSON = {"summary": summary, "responses": responses, **extra}
    if body is not None:
        built["requestBody"] = {"required": True, "content": json_content(body)}
    return built


def document(title: str, paths: JSON, **components: JSON) -> JSON:
    """A whole OpenAPI document."""
    built: JSON = {"openapi": VERSION, "info": {"title": title, "version": "1"}, "paths": paths}
    if components:
        built["components"] = components
    return built


def path_parameter(name: str) -> JSON:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


ANY_OBJECT: JSON = {"type": "object"}

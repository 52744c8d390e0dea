"""The gateway's OpenAPI document (``GET /openapi.json``): the agents' whole HTTP API, for
clients and fuzzers. A tool call's arguments are any JSON object here, since an episode's
catalog decides which tools it shows; each tool's own schema is in its tool service's
document and in the episode's ``tools`` list."""

from __future__ import annotations

from sopgym.core.openapi import ANY_OBJECT, document, operation, path_parameter
from sopgym.gateway.catalog import Catalog
from sopgym.types import JSON

BEARER: JSON = {"EpisodeToken": []}
EPISODE = path_parameter("episode_id")
# Every episode route: bad JSON, no token, a token not this episode's, no such episode, the
# episode over, body too large, a value refused; 502 when a service it needs cannot be reached
# (a server error all the same: the fuzzer counts it, with every service up it never occurs).
EPISODE_REFUSALS = (400, 401, 403, 404, 409, 413, 422, 502)


def gateway_openapi(catalog: Catalog) -> JSON:
    domains = sorted(catalog.services)
    domain_schema: JSON = {"type": "string", "enum": domains}
    opening: JSON = {
        "type": "object",
        "required": ["domain", "task_id"],
        "properties": {
            "domain": domain_schema,
            "task_id": {"type": "string"},
            "distractors": {"type": "integer", "minimum": 0},
            "sop_variant": {"type": "string"},
            "meta": {"type": "object"},
        },
    }
    paths: JSON = {
        "/healthz": {"get": operation("liveness", {200: ANY_OBJECT})},
        "/readyz": {"get": operation("readiness", {200: ANY_OBJECT})},
        "/v1/catalog": {"get": operation("every domain's tools", {200: ANY_OBJECT})},
        "/v1/tasks": {
            "get": operation(
                "a domain's task inputs (never the gold)",
                {200: ANY_OBJECT},
                (404, 422, 502),
                parameters=[_query("domain", domain_schema)],
            )
        },
        "/v1/episodes": {
            "post": operation(
                "open an episode on one of a domain's tasks",
                {201: ANY_OBJECT},
                (400, 404, 413, 422, 502),
                opening,
            )
        },
        "/v1/episodes/{episode_id}": {
            "get": operation(
                "the episode's record (its token, or the admin token)",
                {200: ANY_OBJECT},
                (401, 403, 404),
                parameters=[EPISODE],
                security=[BEARER],
            )
        },
        "/v1/episodes/{episode_id}/tools/{tool_name}": {
            "post": operation(
                "call one of the episode's tools (recorded, whatever the answer)",
                {200: {"type": "object", "required": ["result"]}},
                EPISODE_REFUSALS,
                ANY_OBJECT,
                parameters=[EPISODE, path_parameter("tool_name")],
                security=[BEARER],
            )
        },
        "/v1/episodes/{episode_id}/messages": {
            "post": operation(
                "say a message to the episode's simulated user",
                {200: ANY_OBJECT},
                EPISODE_REFUSALS,
                _object("content", {"type": "string"}),
                parameters=[EPISODE],
                security=[BEARER],
            )
        },
        "/v1/episodes/{episode_id}/finish": {
            "post": operation(
                "finish the episode with its outputs",
                {200: ANY_OBJECT},
                EPISODE_REFUSALS,
                _object("outputs", ANY_OBJECT),
                parameters=[EPISODE],
                security=[BEARER],
            )
        },
    }
    scheme = {"type": "http", "scheme": "bearer"}
    return document("sopgym gateway", paths, securitySchemes={"EpisodeToken": scheme})


def _query(name: str, schema: JSON) -> JSON:
    return {"name": name, "in": "query", "required": True, "schema": schema}


def _object(field: str, schema: JSON) -> JSON:
    """A request body of one required field."""
    return {"type": "object", "required": [field], "properties": {field: schema}}

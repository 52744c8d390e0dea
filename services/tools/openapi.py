"""The tool service's OpenAPI document (``GET /openapi.json``): one operation per tool, its
request body the tool's argument schema, so a fuzzer exercises every tool through the same
validation and code agents reach."""

from __future__ import annotations

from sopgym.core.access import SECRET_HEADER
from sopgym.core.openapi import ANY_OBJECT, document, operation, path_parameter
from sopgym.core.tools import Tool
from sopgym.types import JSON

# A tool call's refusals: malformed, not from the gateway (a service given a secret), no such
# tool or record, a tool's own conflict, body too large, arguments refused; and 504
# tool_timeout, a tool that did not answer within the service's per-call limit.
CALL_REFUSALS = (400, 401, 403, 404, 409, 413, 422, 504)
SECRET: JSON = {"ServiceSecret": []}
EPISODE_HEADER: JSON = {
    "name": "x-sopgym-episode",
    "in": "header",
    "required": False,
    "description": "the episode the call acts on (stateful domains need one)",
    "schema": {"type": "string"},
}
REGISTRATION: JSON = {
    "type": "object",
    "required": ["episode_id", "task_id"],
    "properties": {"episode_id": {"type": "string"}, "task_id": {"type": "string"}},
}


def tool_service_openapi(domain: str, tools: list[Tool]) -> JSON:
    paths: JSON = {
        "/healthz": {"get": operation("liveness", {200: ANY_OBJECT})},
        "/readyz": {"get": operation("readiness and open episodes", {200: ANY_OBJECT})},
        "/v1/tools": {"get": operation("the catalog: SOP, schemas, tool specs", {200: ANY_OBJECT})},
        "/v1/tasks": {"get": operation("the task inputs (never the gold)", {200: ANY_OBJECT})},
        "/v1/episodes": {
            "post": operation(
                "the gateway registers an episode",
                {200: ANY_OBJECT, 201: ANY_OBJECT},
                (400, 401, 403, 404, 413, 422),
                REGISTRATION,
                security=[SECRET],
            )
        },
        "/v1/episodes/{episode_id}": {
            "delete": operation(
                "the gateway closes an episode: its final state",
                {200: ANY_OBJECT},
                (401, 403, 404),
                parameters=[path_parameter("episode_id")],
                security=[SECRET],
            )
        },
    }
    for tool in tools:
        spec = tool.spec
        result = {"type": "object", "required": ["result"], "properties": {"result": {}}}
        paths[f"/v1/tools/{spec.name}"] = {
            "post": operation(
                spec.description or spec.name,
                {200: result},
                CALL_REFUSALS,
                spec.input_schema,
                operationId=spec.name,
                parameters=[EPISODE_HEADER],
                security=[SECRET],
            )
        }
    scheme = {"type": "apiKey", "in": "header", "name": SECRET_HEADER.decode()}
    return document(f"sopgym tools: {domain}", paths, securitySchemes={"ServiceSecret": scheme})

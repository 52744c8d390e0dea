"""API dependency graphs: a one-shot (``graph``) test domain with no tools.

Each task describes a service's APIs by their signatures (input and output fields); the answer
is the directed dependency graph between them. It proves the one-shot path: one model call per
task, no agent loop, the answer submitted through a gateway episode with an empty catalog.
"""

from pathlib import Path

from sopgym.core.domain import DomainPack
from tests.testpacks.apigraph.generator import generate
from tests.testpacks.apigraph.policy import solve

_NAMES = {"type": "array", "items": {"type": "string", "minLength": 1}}

DOMAIN = DomainPack(
    name="apigraph",
    title="API dependency graphs (one-shot test domain)",
    folder=Path(__file__).parent,
    tools=[],
    generate=generate,
    solve=solve,
    kind="graph",
    input_schema={
        "type": "object",
        "properties": {
            "context": {"type": "string", "minLength": 1},
            "apis": {
                "type": "array",
                "minItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "description": {"type": "string"},
                        "inputs": _NAMES,
                        "outputs": _NAMES,
                    },
                    "required": ["name", "inputs", "outputs"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["context", "apis"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "nodes": {**_NAMES, "description": "every API name"},
            "edges": {
                "type": "array",
                "description": "[from, to]: `to` needs a field that `from` outputs",
                "items": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 2,
                    "maxItems": 2,
                },
            },
        },
        "required": ["nodes", "edges"],
        "additionalProperties": False,
    },
)

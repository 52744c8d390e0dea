"""Fuzzing a running service against its own OpenAPI document with schemathesis.

Every operation of the document gets generated cases, valid ones (``positive``: from the
tool's argument schema, so they reach the tool's code) and invalid ones (``negative``: they
must be refused). Each answer is held to the document: no 5xx, only documented statuses,
JSON where JSON is promised, bodies of the documented shape. The CI test runs a bounded
number of cases; ``bench/fuzz.py`` runs thousands per service.

``prepare`` lets a caller make a case deeper than a generator could: the gateway's episode
routes get a real episode and its token most of the time (a random id only reaches 404).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Err

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
Prepare = Callable[[Case], dict[str, str]]  # may edit the case; returns headers to send


@dataclass
class FuzzCounts:
    """What a fuzzing run did: cases sent, answers by status, and each failed check."""

    cases: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: int = 0
    failures: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "server_errors": self.server_errors,
            "failures": len(self.failures),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
        }


def fuzz(
    openapi_url: str,
    cases: int,
    prepare: Prepare | None = None,
    headers: dict[str, str] | None = None,
    per_operation: int = 50,
) -> FuzzCounts:
    """Send at least ``cases`` generated cases over every operation of the document at
    ``openapi_url`` (rounds of ``per_operation`` examples each, alternating valid and invalid
    ones, a new seed each round) and check every answer."""
    schema = schemathesis.openapi.from_url(openapi_url)
    base = openapi_url.rsplit("/", 1)[0]
    operations = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):  # our own documents: an invalid one is a bug to report
            raise ValueError(f"{openapi_url}: invalid OpenAPI document: {result.err()}")
        operations.append(result.ok())
    counts = FuzzCounts()
    round_ = 0
    while counts.cases < cases:
        mode = GenerationMode.POSITIVE if round_ % 2 == 0 else GenerationMode.NEGATIVE
        for operation in operations:
            _round(operation.as_strategy(mode), base, counts, per_operation, round_, prepare,
                   headers or {})  # fmt: skip
        round_ += 1
    return counts


def _round(
    strategy: Any,
    base: str,
    counts: FuzzCounts,
    examples: int,
    round_: int,
    prepare: Prepare | None,
    headers: dict[str, str],
) -> None:
    @seed(round_)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def send(case: Case) -> None:
        sent = {**headers, **(prepare(case) if prepare else {})}
        response = case.call(base_url=base, headers=sent)
        counts.cases += 1
        counts.statuses[response.status_code] += 1
        counts.server_errors += response.status_code >= 500
        try:
            case.validate_response(response, checks=CHECKS, headers=sent)
        except Exception as failure:  # a failed check: counted and kept, the run goes on
            counts.failures.append(f"{case.operation.label}: {str(failure)[:300]}")

    with suppress(Unsatisfiable):  # no invalid case exists (an operation without input)
        send()


def episode_preparer(gateway_url: str, domain: str, task_id: str, seed_: int = 0) -> Prepare:
    """For the gateway's episode routes: four cases in five get a freshly opened episode of
    ``task_id``, its token and (for a tool call) one of its tools' names; the fifth keeps
    what was generated. Other routes are sent as generated."""
    draw = random.Random(seed_)
    client = httpx.Client(base_url=gateway_url, timeout=30)

    def prepare(case: Case) -> dict[str, str]:
        path = case.path_parameters or {}
        if "episode_id" not in path or draw.random() < 0.2:
            return {}
        opened = client.post("/v1/episodes", json={"domain": domain, "task_id": task_id,
                                                   "distractors": 2}).json()  # fmt: skip
        path["episode_id"] = opened["episode_id"]
        if "tool_name" in path:
            path["tool_name"] = draw.choice(opened["tools"])["name"]
        return {"Authorization": f"Bearer {opened['token']}"}

    return prepare

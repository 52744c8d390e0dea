"""A banking scenario as data: its application record, its APIs and its SOP's rules.

The dependency graph is never written by hand: API B depends on API A exactly when B takes a
field that A returns (paper §3.2), so :func:`edges` derives it from the signatures, and the
packs' tests compare its size with the paper's figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Final

from sopgym.core.depgraph import dependency_edges

# Where an API sits in the SOP: the record fetch, screening (always run), the offer (only when
# the screening rejects nothing), the approval chain, and the final write-back.
STAGES: Final = ("fetch", "screen", "offer", "approval", "write")
KEY: Final = "application_id"
# Final-state paths the SOP never writes (the write-back's optional free-text note): a
# difference there is reported, never failed (docs/banking.md, "The database")
HARMLESS_STATE: Final = ("$.application.decision_note",)
DECISIONS: Final = ("approve", "counter_offer", "reject")


@dataclass(frozen=True)
class Api:
    name: str
    description: str
    stage: str
    inputs: tuple[str, ...]  # besides the application id, which every API takes
    outputs: tuple[str, ...] = ()

    @property
    def fields_taken(self) -> tuple[str, ...]:
        """The record fields it takes (its control arguments, such as ``level``, aside: no
        API returns those, so they make no edge)."""
        return (KEY, *self.inputs)


@dataclass(frozen=True)
class Check:
    """An exception path: the application is rejected with ``reason`` when ``field`` is
    true (``rejects="true"``), false (``"false"``), below ``threshold`` (``"below"``) or
    above it (``"above"``)."""

    field: str
    rejects: str
    reason: str
    text: str  # what the check protects, for the SOP texts
    threshold: float | None = None

    def fails(self, value: object) -> bool:
        if self.rejects in ("true", "false"):
            return value is (self.rejects == "true")
        assert self.threshold is not None and isinstance(value, int | float)
        return value < self.threshold if self.rejects == "below" else value > self.threshold


@dataclass(frozen=True)
class Pricing:
    """Scenarios with six output fields also price the granted amount: a rate (the base rate
    plus the risk band's premium) and a monthly amount (an annuity over ``term_field`` months,
    or the interest alone when there is no term)."""

    base_rate: str  # obtained field
    band: str  # obtained field, one of the premiums' keys
    premiums: tuple[tuple[str, float], ...]
    rate_output: str
    monthly_output: str
    term_field: str | None = None  # given field


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    entity: str  # "loan application"
    id_prefix: str
    context: str  # the business context document
    given: tuple[str, ...]  # fields of the application record (the data template's inputs)
    recorded: tuple[str, ...]  # screening results the write-back stores on the record
    request_field: str  # given: the amount applied for
    limit_field: str  # obtained: the most that may be granted
    amount_output: str  # output: the amount granted
    tiers: tuple[tuple[str, int], ...]  # approval levels, lowest first, with their authority
    checks: tuple[Check, ...]
    apis: tuple[Api, ...]
    task_count: int
    paper_graph: tuple[int, int]  # (nodes, edges) in the paper's Table 1
    paper_catalog: int  # APIs in the scenario's whole catalog (paper A.3), distractors included
    pricing: Pricing | None = None
    harmless_state: tuple[str, ...] = HARMLESS_STATE

    @cached_property
    def api_map(self) -> dict[str, Api]:
        return {api.name: api for api in self.apis}

    def stage(self, stage: str) -> list[Api]:
        return [api for api in self.apis if api.stage == stage]

    @property
    def fetch(self) -> Api:
        (api,) = self.stage("fetch")
        return api

    @property
    def approval(self) -> Api:
        (api,) = self.stage("approval")
        return api

    @property
    def write(self) -> Api:
        (api,) = self.stage("write")
        return api

    @property
    def obtained(self) -> list[str]:
        """Fields only an API call reveals (the data template's "to obtain" part)."""
        return [f for api in self.apis if api.stage in ("screen", "offer") for f in api.outputs]

    @property
    def levels(self) -> list[str]:
        return [level for level, _ in self.tiers]

    @property
    def output_fields(self) -> list[str]:
        names = ["decision", self.amount_output, "approval_level"]
        if self.pricing:
            names += ["reason_code", self.pricing.rate_output, self.pricing.monthly_output]
        return names

    def edges(self) -> list[tuple[str, str]]:
        return dependency_edges(
            [(a.name, a.fields_taken, self.returns(a)) for a in self.apis]
        )

    def returns(self, api: Api) -> tuple[str, ...]:
        return self.given if api.stage == "fetch" else api.outputs

    def dependencies(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for producer, consumer in self.edges():
            found.setdefault(consumer, []).append(producer)
        return found

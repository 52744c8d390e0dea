"""Tools: a JSON-Schema contract plus a deterministic implementation over a domain's data.

A tool module in a domain pack defines one tool with the :func:`tool` decorator. The same
object serves HTTP calls in the tool service and gold calls in the reference policy, so the
labels and the live API can never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sopgym.core.errors import ToolError
from sopgym.core.schema import ArgumentValidator
from sopgym.types import JSON

if TYPE_CHECKING:  # pandas stays out of the gateway, which renders specs from here
    from sopgym.core.tables import Tables


# How long a tool service lets one call's implementation run before it answers 504
# ``tool_timeout``: under the gateway's 30 s upstream limit, so the service's answer wins.
DEFAULT_TOOL_TIMEOUT_S = 10.0


class EpisodeStore(Protocol):
    """An episode's own state held outside JSON (a database): what the episode leaves is
    scored through :meth:`snapshot`, plain JSON of the tables that count."""

    def snapshot(self) -> JSON: ...


@dataclass
class ToolContext:
    """What a tool implementation may read (and, for stateful domains, write).

    ``tables`` is the domain's immutable dataset, shared by all episodes. ``state`` is the
    episode's own mutable copy for stateful domains (``None`` for read-only domains), so
    concurrent episodes never see each other's writes; ``store`` is the same for a domain
    whose state is an object such as a database (``DomainPack.episode_store``).
    """

    tables: Tables
    files_dir: Any = None
    state: dict[str, Any] | None = None
    episode_id: str | None = None
    store: EpisodeStore | None = None

    def final_state(self) -> JSON | None:
        """The state the episode leaves, as JSON (``None`` on stateless domains)."""
        return self.store.snapshot() if self.store is not None else self.state


@dataclass(frozen=True)
class ToolSpec:
    """A tool's public contract, in a neutral JSON Schema form."""

    name: str
    description: str
    input_schema: JSON
    output_schema: JSON = field(default_factory=lambda: {"type": "object"})

    def to_neutral(self) -> JSON:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
        }

    def to_openai(self) -> JSON:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }

    def to_anthropic(self) -> JSON:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    def to_bedrock(self) -> JSON:
        return {
            "toolSpec": {
                "name": self.name,
                "description": self.description,
                "inputSchema": {"json": self.input_schema},
            }
        }

    def rendered(self) -> JSON:
        """The spec plus its renderings for the three common function-calling APIs."""
        return {
            **self.to_neutral(),
            "openai": self.to_openai(),
            "anthropic": self.to_anthropic(),
            "bedrock": self.to_bedrock(),
        }

    @classmethod
    def from_neutral(cls, data: Mapping[str, Any]) -> ToolSpec:
        return cls(
            name=data["name"],
            description=data.get("description", ""),
            input_schema=dict(data.get("input_schema") or {"type": "object"}),
            output_schema=dict(data.get("output_schema") or {"type": "object"}),
        )


Implementation = Callable[[JSON, ToolContext], JSON]


class Tool:
    """A spec bound to its implementation; calling it validates first, then runs.

    A ``strict=False`` tool (an imported benchmark's, by default) runs even when an argument
    object breaks its schema, as the benchmark's own harness would: the published schema may
    disagree with the benchmark's own data, and refusing would make tasks unsolvable that the
    source does not. The disagreement comes back as a warning with the result.
    """

    def __init__(
        self,
        spec: ToolSpec,
        implementation: Implementation,
        strict: bool = True,
        slow_by_design: bool = False,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.strict = strict
        # documented as slow: its tool_timeout is the agent's tool_error (it chose to call it),
        # where any other tool's is the infrastructure's (sopgym.evaluation.scoring)
        self.slow_by_design = slow_by_design
        self._implementation = implementation
        self._validator = ArgumentValidator(spec.input_schema)

    def __call__(self, arguments: Any, ctx: ToolContext) -> JSON:
        return self.call(arguments, ctx)[0]

    def call(self, arguments: Any, ctx: ToolContext) -> tuple[JSON, list[str]]:
        """The result, and the schema disagreements a lenient tool passed through."""
        warnings = self._check(arguments)
        result = self._implementation(arguments, ctx)
        if not isinstance(result, dict):
            # A tool that returns None (or a bare value) is a defect of the domain pack,
            # never something an agent should have to guess about.
            raise TypeError(f"tool {self.name!r} returned {type(result).__name__}, not an object")
        return result, warnings

    def _check(self, arguments: Any) -> list[str]:
        try:
            self._validator.validate(arguments)
        except ToolError as disagreement:
            if self.strict or not isinstance(arguments, dict):  # never a non-object through
                raise
            where = f" ({disagreement.field})" if disagreement.field else ""
            return [f"schema disagreement{where}: {disagreement.code}: {disagreement.message}"]
        return []

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def tool(
    name: str,
    description: str,
    input_schema: JSON,
    output_schema: JSON | None = None,
    slow_by_design: bool = False,
) -> Callable[[Implementation], Tool]:
    """Declare a tool: ``@tool(name, description, input_schema, output_schema)`` on ``run``
    (``slow_by_design``: its description says it may run past the service's per-call limit)."""

    def wrap(implementation: Implementation) -> Tool:
        spec = ToolSpec(name, description, input_schema, output_schema or {"type": "object"})
        return Tool(spec, implementation, slow_by_design=slow_by_design)

    return wrap


def not_found(what: str, key: str, value: Any) -> ToolError:
    """The error a lookup tool raises when the record an agent asked for does not exist."""
    return ToolError("not_found", f"no {what} with {key} {value!r}", key)


def arguments_schema(
    properties: JSON, *, required: list[str] | None = None, examples: list[JSON] | None = None
) -> JSON:
    """A closed input schema: unknown arguments are refused, and every listed argument is
    required unless ``required`` says otherwise. ``examples`` are valid argument sets (every
    distractor needs one, since no gold call exercises it)."""
    schema: JSON = {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }
    if examples:
        schema["examples"] = examples
    return schema


def result_schema(properties: JSON) -> JSON:
    """An output schema in which every listed key is always present (possibly null)."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def require_row(
    ctx: ToolContext, table: str, key: str, value: Any, what: str | None = None
) -> dict[str, Any]:
    """The row of ``table`` whose ``key`` is ``value``; an unknown key is refused as
    ``not_found`` (the caller's mistake, never an SOP branch)."""
    row = ctx.tables.row(table, key, value)
    if row is None:
        raise not_found(what or table.rstrip("s"), key, value)
    return row

"""Domain packs: an SOP, its tools, a seeded data generator and the SOP as executable code.

A pack is a folder under ``domains/`` whose ``__init__.py`` exposes ``DOMAIN``. See
docs/domain-pack.md for the format.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sopgym.core.dialogue import SimulatedUser, UserBehaviour
from sopgym.core.tables import Tables
from sopgym.core.tasks import Solution, Task, ToolCall
from sopgym.core.tools import EpisodeStore, Tool, ToolContext
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.core.scorer import Scorer


@dataclass
class GeneratedData:
    """What a domain's generator returns: the dataset and the tasks' inputs (no labels)."""

    tables: dict[str, Any]  # table name -> pandas DataFrame
    tasks: list[Task]
    # dialogue packs: task id -> the user's private profile (goal, facts only the user knows);
    # kept in the gold, never in the task the agent is given
    users: dict[str, JSON] = field(default_factory=dict)


class PolicyRun:
    """The reference policy's handle on the tools: every call runs the real implementation
    (with schema validation) and is recorded as a gold call, in order."""

    def __init__(
        self, tools: dict[str, Tool], ctx: ToolContext, user: SimulatedUser | None = None
    ) -> None:
        self._tools = tools
        self._ctx = ctx
        self._user = user
        self.calls: list[ToolCall] = []

    def call(self, name: str, /, **arguments: Any) -> JSON:
        self.calls.append(ToolCall(name, dict(arguments)))
        return self._tools[name](dict(arguments), self._ctx)

    def ask_user(self, text: str) -> str:
        """Say ``text`` to the task's simulated user (dialogue packs) and return the reply;
        the exchange is recorded as gold conversation turns, in order."""
        if self._user is None:
            raise RuntimeError("this task has no simulated user (not a dialogue task)")
        return self._user.ask(text, len(self.calls))

    @property
    def messages(self) -> list[JSON]:
        return self._user.messages if self._user else []

    @property
    def state(self) -> dict[str, Any] | None:
        return self._ctx.state


# Bump when what ``sopgym.core.dataset`` derives and caches (gold, tasks) changes shape or
# meaning: every pack's fingerprint changes with it, so no stale cache is read.
DATA_FORMAT = 3

Generator = Callable[[int, Path], GeneratedData]
Policy = Callable[[Task, PolicyRun], Solution]


@dataclass
class DomainPack:
    name: str
    title: str
    folder: Path
    tools: list[Tool]
    generate: Generator
    solve: Policy
    input_schema: JSON
    output_schema: JSON
    dependencies: dict[str, list[str]] = field(default_factory=dict)
    distractors: list[Tool] = field(default_factory=list)
    index_keys: dict[str, str] = field(default_factory=dict)
    seed: int = 7
    kind: str = "tool_use"
    # Stateful domains: the state one task's episode starts from (JSON: dicts, lists of rows)
    initial_state: Callable[[Tables, Task], JSON] | None = None
    # ... or, for state held in an object (a database), a fresh one per episode
    episode_store: Callable[[Tables, Task], EpisodeStore] | None = None
    # Folders outside ``folder`` whose sources the pack is made of (a family's shared code):
    # part of the fingerprint, so an edit there regenerates the data too
    source_folders: list[Path] = field(default_factory=list)
    sop_files: dict[str, str] = field(
        default_factory=lambda: {"clean": "sop.md", "noisy": "sop_noisy.md"}
    )
    # False for imported benchmarks: ``solve`` only knows the expected outputs, so there are
    # no gold calls and tool-call metrics do not apply.
    reference_policy: bool = True
    # How episodes are scored (docs/domain-pack.md, "Scoring"); None: the task kind's defaults.
    # An entry may be a scorer's name or "module:attr" (the plug-in registry resolves it)
    scorers: Sequence[Scorer | str] | None = None
    # The papers' own scoring profiles that re-read this pack's episodes, by name
    # (sopgym.evaluation.profiles): a family's packs declare their paper's
    paper_profiles: tuple[str, ...] = ()
    # dialogue packs: how the simulated user answers (see sopgym.core.dialogue)
    user: UserBehaviour | None = None
    # Stateful packs: final-state paths where a difference from the gold is harmless (a column
    # the SOP never writes); ``[*]`` stands for any list index. Reported, never failed.
    harmless_state: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.initial_state is not None and self.episode_store is not None:
            raise ValueError(f"domain {self.name}: initial_state or episode_store, not both")
        names = [t.name for t in self.all_tools()]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"domain {self.name}: duplicate tool names {sorted(duplicates)}")

    @property
    def input_fields(self) -> list[str]:
        return list(self.input_schema.get("properties", {}))

    @property
    def output_fields(self) -> list[str]:
        return list(self.output_schema.get("properties", {}))

    def all_tools(self) -> list[Tool]:
        return [*self.tools, *self.distractors]

    def tool_map(self) -> dict[str, Tool]:
        return {t.name: t for t in self.all_tools()}

    def sop(self, variant: str = "clean") -> str:
        if variant not in self.sop_files:
            raise KeyError(f"domain {self.name} has no SOP variant {variant!r}")
        return (self.folder / self.sop_files[variant]).read_text()

    @property
    def stateful(self) -> bool:
        return self.initial_state is not None or self.episode_store is not None

    def context(
        self,
        tables: Tables,
        files_dir: Path | None,
        task: Task | None = None,
        episode_id: str | None = None,
    ) -> ToolContext:
        """The one place a tool context is made: a stateful domain's holds a fresh copy of
        ``task``'s initial state, which a context without its task cannot have."""
        if self.stateful and task is None:
            raise ValueError(f"domain {self.name} is stateful: a context needs its task")
        state, store = None, None
        if self.episode_store is not None and task is not None:
            store = self.episode_store(tables, task)
        if self.initial_state is not None and task is not None:
            # The JSON round trip proves the state serialisable (it is answered and stored as
            # JSON) and shares no object with the tables or with another episode's state.
            state = orjson.loads(orjson.dumps(self.initial_state(tables, task)))
        return ToolContext(
            tables=tables, files_dir=files_dir, state=state, episode_id=episode_id, store=store
        )

    def fingerprint(self) -> str:
        """Changes whenever any source file of the pack changes, or the format of the data
        derived from it does (:data:`DATA_FORMAT`), so cached data regenerates."""
        digest = hashlib.sha256(f"{DATA_FORMAT}|{self.seed}".encode())
        for folder in [self.folder, *self.source_folders]:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and path.suffix in {".py", ".md", ".json"}:
                    digest.update(path.relative_to(folder).as_posix().encode())
                    digest.update(path.read_bytes())
        return digest.hexdigest()[:12]


def missing_outputs(domain: DomainPack, outputs: JSON) -> list[str]:
    return [f for f in domain.output_fields if f not in outputs]


def leaked_fields(domain: DomainPack, payloads: Iterable[JSON]) -> set[str]:
    """Output field names that appear as keys anywhere in ``payloads`` (inputs or results)."""
    wanted = set(domain.output_fields)
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            found.update(wanted & set(value))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for payload in payloads:
        walk(payload)
    return found

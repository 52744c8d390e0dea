"""An imported benchmark as a :class:`DomainPack`, so the standard tool service serves it.

Each toolspec becomes a :class:`Tool` whose implementation forwards to the benchmark's own
``tools.py`` through a :class:`ToolsBridge`; the bridge loads that file on the first call, so
only the process that serves calls (the tool service) ever imports it. Tasks come from the CSV
and the "reference policy" only knows the expected outputs: no gold calls.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sopgym.core.domain import DomainPack, GeneratedData, PolicyRun
from sopgym.core.tasks import Solution, Task
from sopgym.core.tools import JSON, Implementation, Tool, ToolContext
from sopgym.importers.bridge import NullResult, ToolsBridge
from sopgym.importers.layout import LAYOUT_FILES, SOP, Benchmark
from sopgym.importers.tasks import build_tasks, columns_schema

ADAPTER_VERSION = "3"  # bump when the materialised tasks or gold change shape


@dataclass
class ImportedDomain(DomainPack):
    """A DomainPack whose data is a published folder rather than a generator."""

    source_digest: str = ""
    # data rows whose expected output is empty, with those columns: kept and flagged (the
    # sopbench profile scores them as SOP-Bench does; see sopgym.importers.tasks.build_tasks)
    empty_expected: dict[int, list[str]] = field(default_factory=dict)

    def fingerprint(self) -> str:
        return self.source_digest


NULL_WARNING = "the tool returned None: served as a successful null, as SOP-Bench serves it"


class ImportedTool(Tool):
    """A benchmark's tool: a ``None`` it returned comes back as ``null`` with a warning on the
    call (recorded by the gateway), so it is seen, never counted as our tool error."""

    def call(self, arguments: Any, ctx: ToolContext) -> tuple[JSON, list[str]]:
        result, warnings = super().call(arguments, ctx)
        if isinstance(result, NullResult):
            warnings = [*warnings, NULL_WARNING]
        return result, warnings


def build_domain(
    bench: Benchmark,
    input_columns: list[str],
    strict_schemas: bool = False,
    none_as_error: bool = False,
) -> ImportedDomain:
    """The benchmark as a pack. SOP-Bench's own tool manager never validates arguments, and
    its published schemas sometimes disagree with its own data, so by default a call that
    breaks a toolspec reaches the tool with a warning; ``strict_schemas`` refuses it. A tool
    returning ``None`` answers ``null`` (as SOP-Bench does) unless ``none_as_error``."""
    tasks, expected, empty_expected = build_tasks(bench, input_columns)
    bridge = ToolsBridge(bench.folder, [s.name for s in bench.specs], none_as_error)

    def generate(seed: int, files_dir: Path) -> GeneratedData:
        return GeneratedData(tables={}, tasks=list(tasks))

    def solve(task: Task, run: PolicyRun) -> Solution:
        return Solution(outputs=dict(expected[task.id]))

    return ImportedDomain(
        name=bench.domain_name,
        title=f"SOP-Bench {bench.name} (imported from {bench.folder})",
        folder=bench.folder,
        tools=[
            ImportedTool(spec, _forward(bridge, spec.name), strict_schemas) for spec in bench.specs
        ],
        generate=generate,
        solve=solve,
        input_schema=columns_schema(bench, input_columns),
        output_schema=columns_schema(bench, bench.output_columns),
        sop_files={"clean": SOP},
        reference_policy=False,
        paper_profiles=("sopbench",),  # SOP-Bench's own definitions re-read every import
        source_digest=_digest(bench.folder, input_columns),
        empty_expected=empty_expected,
    )


def _forward(bridge: ToolsBridge, name: str) -> Implementation:
    def run(arguments: JSON, ctx: ToolContext) -> JSON:
        return bridge.serve(name, arguments)

    return run


def _digest(folder: Path, input_columns: list[str]) -> str:
    """Changes when any file of the layout or the chosen inputs change: cached tasks refresh."""
    digest = hashlib.sha256(f"sopbench:{ADAPTER_VERSION}".encode())
    digest.update(json.dumps(input_columns).encode())
    for name in LAYOUT_FILES:
        path = folder / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    return digest.hexdigest()[:12]

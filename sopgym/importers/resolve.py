"""Imported benchmarks by name: ``sopbench/<name>`` or ``sopmaze/<name>`` -> a ready
:class:`ImportedDomain`.

Import and load apply the same checks, so a benchmark that imported cleanly loads the same way
in the runner and in the tool service, and one that cannot be served is refused with one line.
"""

from __future__ import annotations

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.core.errors import UnknownDomainError
from sopgym.core.import_index import ImportIndexError, read_index
from sopgym.importers import ABCD_PREFIX, GENERATED_PREFIX, MAZE_PREFIX
from sopgym.importers.adapter import ImportedDomain, build_domain
from sopgym.importers.layout import Benchmark, read_benchmark
from sopgym.importers.tasks import InputColumnsError, input_columns_for


class ImportProblem(UnknownDomainError):
    """An imported name that cannot be loaded; its message is the whole story."""

    def __str__(self) -> str:
        return str(self.args[0])


def prepare(
    bench: Benchmark,
    given_inputs: list[str] | None = None,
    strict_schemas: bool = False,
    none_as_error: bool = False,
) -> ImportedDomain:
    """The servable domain of a parsed benchmark, or :class:`ImportProblem` saying why not;
    unless ``strict_schemas``, its tools pass calls that break their specs through; unless
    ``none_as_error``, a tool's ``None`` answers ``null``."""
    blocking = bench.blocking()
    if blocking:
        raise ImportProblem(f"{bench.name}: {blocking[0].message}")
    try:
        inputs = input_columns_for(bench, given_inputs)
    except InputColumnsError as error:
        raise ImportProblem(str(error)) from None
    domain = build_domain(bench, inputs, strict_schemas, none_as_error)
    if not domain.tools:
        raise ImportProblem(f"{bench.name}: toolspecs.json declares no usable tool")
    tasks = domain.generate(domain.seed, bench.folder)
    if not tasks.tasks:
        raise ImportProblem(f"{bench.name}: test_set_with_outputs.csv has no well-formed row")
    return domain


def imported_names() -> list[str]:
    try:
        return sorted(read_index())
    except ImportIndexError:
        return []


def load_imported(name: str) -> DomainPack:
    try:
        entry = read_index().get(name)
    except ImportIndexError as error:
        raise ImportProblem(str(error)) from None
    if entry is None:
        known = ", ".join(imported_names()) or "none"
        how = (
            "sop-maze <file or folder>"
            if name.startswith(MAZE_PREFIX)
            else "abcd <folder>"
            if name.startswith(ABCD_PREFIX)
            else None
            if name.startswith(GENERATED_PREFIX)
            else "sop-bench <folder>"
        )
        run = f"sopgym import {how}" if how else "sopgym generate ... --out <folder>"
        raise ImportProblem(f"{name} is not imported (imported: {known}); run: {run}")
    if name.startswith(MAZE_PREFIX):
        return _load_maze(name, entry.path, entry.shape)
    if not entry.path.is_dir():
        raise ImportProblem(f"{name}: folder {entry.path} no longer exists; import it again")
    if name.startswith(GENERATED_PREFIX):
        from sopgym.generation.pack import load_pack

        try:
            return load_pack(entry.path)
        except Exception as error:  # generated code that no longer loads: one line, no traceback
            raise ImportProblem(f"{name}: {type(error).__name__}: {error}") from None
    if name.startswith(ABCD_PREFIX):
        from sopgym.importers.abcd import AbcdError, build_abcd

        try:
            return build_abcd(entry.path)
        except AbcdError as error:
            raise ImportProblem(f"{name}: {error}") from None
    return prepare(
        read_benchmark(entry.path), entry.input_columns, entry.strict_schemas, entry.none_as_error
    )


def _load_maze(name: str, path: Path, shape: str | None) -> ImportedDomain:
    from sopgym.importers.sopmaze import MazeInputError, build_domain, read_file

    if not path.is_file():
        raise ImportProblem(f"{name}: file {path} no longer exists; import it again")
    try:
        found = read_file(path, shape)
        found.name = name  # the registered name (a scenario twice in a folder keeps a digest)
        return build_domain(found)
    except MazeInputError as error:
        raise ImportProblem(f"{name}: {error}") from None


def run_refusal(agent: str, domains: list[DomainPack]) -> str | None:
    """Why ``agent`` cannot be scored honestly on the imported benchmarks among ``domains``.

    Their gold has no calls: on a benchmark with tools the oracle would replay nothing and
    answer the expected outputs. On an answer-only import (SOP-Maze, ABCD: no tools) answering
    the published target is the whole task, so the oracle may: it proves the path and the
    scorer. The scripted model is fine: on them it plays the generic policy, not the gold.
    """
    imported = [d.name for d in domains if not d.reference_policy and d.tools]
    if imported and agent == "oracle":
        return f"{imported[0]} has no reference policy, so no oracle: use --agent baseline"
    return None

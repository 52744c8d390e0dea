"""``sopgym import sop-bench`` and ``sopgym audit sop-bench``: click groups added to the CLI.

Every failure is one clear line: a broken benchmark is reported and skipped, never a traceback,
and never a reason to stop importing or auditing the others.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from sopgym.core.import_index import HOME_ENV, ImportEntry, ImportIndexError, read_index, register
from sopgym.core.isolated import DEFAULT_TIMEOUT_S
from sopgym.core.untrusted import printable
from sopgym.terminal import echo

if TYPE_CHECKING:
    from sopgym.importers.layout import Benchmark

# The parsing, audit and report modules load pandas and jsonschema: they are imported inside
# the commands, so every other sopgym command (workers, gateway) starts without them.

_HOME = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Folder of the import registry imports.json (default: ${HOME_ENV} or ~/.config/sopgym).",
)
_INPUTS = click.option(
    "--input-columns",
    default=None,
    metavar="A,B,C",
    help="Task input columns for benchmarks whose metadata.json names none.",
)
_TIMEOUT = click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Seconds one benchmark's tools.py may take (it runs in a child process, killed then).",
)


def _use_home(home: Path | None) -> None:
    if home is not None:
        os.environ[HOME_ENV] = str(home.resolve())  # children (services) inherit it


def _columns(text: str | None) -> list[str] | None:
    columns = [c.strip() for c in (text or "").split(",") if c.strip()]
    return columns or None


def _folders(path: Path) -> list[Path]:
    from sopgym.importers.layout import find_benchmarks

    if not path.exists():
        raise click.UsageError(f"{path} does not exist")
    folders = find_benchmarks(path) if path.is_dir() else []
    if not folders:
        raise click.UsageError(f"no SOP-Bench benchmark folder at {path}")
    return folders


def _warn_uncallable(folder: Path, tool_names: list[str], timeout: float) -> None:
    """Load tools.py in a child with a time limit and warn about spec tools it cannot call."""
    from sopgym.core.isolated import run_isolated
    from sopgym.importers.bridge import unimplemented

    try:
        missing = run_isolated(unimplemented, (folder, tool_names), timeout, read_only=True)
    except Exception as error:  # a tools.py that hangs or fails: every call would fail
        echo(f"  warning: tools.py did not load: {error} (every tool call will fail)")
        return
    if missing:
        echo(
            f"  warning: tools.py cannot call {', '.join(missing)} "
            "(calls to them will fail and count as tool_error)"
        )


@click.group("import")
def import_group() -> None:
    """Register published benchmarks as domains (by path: nothing is copied)."""


@import_group.command("sop-bench")
@click.argument("path", type=click.Path(path_type=Path))
@_INPUTS
@_HOME
@click.option(
    "--strict-schemas",
    is_flag=True,
    help="Refuse tool calls that break toolspecs.json (default: pass them to the tools, as "
    "SOP-Bench does, with a warning on the call).",
)
@click.option(
    "--none-as-error",
    is_flag=True,
    help="Answer a tool that returns None with internal_error, counted as a tool_error (our "
    "strict view; default: a successful null with a warning on the call, as SOP-Bench).",
)
@_TIMEOUT
def import_sop_bench(
    path: Path,
    input_columns: str | None,
    home: Path | None,
    strict_schemas: bool,
    none_as_error: bool,
    timeout: float,
) -> None:
    """Import PATH: one SOP-Bench benchmark folder, a folder of them, or a SOP-Bench checkout.

    Each becomes the domain sopbench/<folder name>, runnable with `sopgym run`.
    """
    from sopgym.importers.findings import defects
    from sopgym.importers.layout import read_benchmark
    from sopgym.importers.resolve import ImportProblem, prepare

    _use_home(home)
    given = _columns(input_columns)
    entries: list[ImportEntry] = []
    for folder in _folders(path):
        try:
            bench = read_benchmark(folder)
            domain = prepare(bench, given, strict_schemas, none_as_error)
        except ImportProblem as error:
            echo(f"skipped {error}")  # the message starts with the benchmark's name
            continue
        except Exception as error:  # a benchmark we cannot even parse: report, go on
            echo(f"skipped {printable(folder.name)}: {type(error).__name__}: {error}")
            continue
        named = given if bench.input_columns is None else None
        entries.append(
            ImportEntry(
                bench.domain_name, bench.folder, named, strict_schemas, none_as_error=none_as_error
            )
        )
        tasks = len(domain.generate(domain.seed, bench.folder).tasks)
        note = ""
        if defects(bench.problems):
            note = f" ({len(defects(bench.problems))} problem(s) in its files: run sopgym audit)"
        echo(f"imported {bench.domain_name}: {tasks} tasks, {len(domain.tools)} tools{note}")
        _warn_uncallable(bench.folder, [t.name for t in domain.tools], timeout)
        if bench.input_columns is None and not given and bench.inferred_input_columns:
            echo(
                f"  warning: {bench.name}'s metadata.json names no input_columns; inferred from "
                f"{bench.inferred_from}: {_shown_inference(bench)} "
                "(name others with --input-columns)"
            )
        if domain.empty_expected:
            rows = ", ".join(str(r) for r in sorted(domain.empty_expected))
            echo(
                f"  {len(domain.empty_expected)} row(s) with an empty expected output kept and "
                f"flagged (SOP-Bench matches any null-like answer there): rows {rows}"
            )
    if not entries:
        echo("nothing imported")
        sys.exit(1)
    try:
        where = register(entries)
    except (OSError, ImportIndexError) as error:
        raise click.ClickException(f"cannot write the import registry: {error}") from None
    echo(f"registered {len(entries)} benchmark(s) in {where}")


def _shown_inference(bench: Benchmark) -> str:
    """The inferred input columns, each with the tools that take it when the specs said."""
    columns = bench.inferred_input_columns or []
    return ", ".join(
        f"{c} ({', '.join(bench.inferred_by[c])})" if c in bench.inferred_by else c
        for c in columns
    )


@import_group.command("abcd")
@click.argument("path", type=click.Path(path_type=Path))
@_HOME
def import_abcd(path: Path, home: Path | None) -> None:
    """Import PATH, a folder of ABCD's published files: a task after every customer turn of its
    conversations (TOD-ProcBench's task 1), the domain abcd/next-action. A file that cannot be
    read is one line, and nothing is registered; an id that maps to no guideline is one
    warning line, its conversations left out."""
    from sopgym.importers.abcd import DOMAIN_NAME, AbcdError, build_abcd, read_abcd

    _use_home(home)
    try:
        data = read_abcd(path)
        domain = build_abcd(path, data)
    except AbcdError as error:
        for note in error.notes:  # what did not map: the cause of an import with no task
            echo(f"  not mapped: {note}", err=True)
        echo(f"error: {error}", err=True)
        sys.exit(2)
    for note in data.notes:
        echo(f"  warning: {note}")
    tasks = len(domain.generate(domain.seed, path).tasks)
    try:
        where = register([ImportEntry(DOMAIN_NAME, path.resolve())])
    except (OSError, ImportIndexError) as error:
        raise click.ClickException(f"cannot write the import registry: {error}") from None
    echo(f"imported {DOMAIN_NAME}: {tasks} tasks; registered in {where}")


@import_group.command("sop-maze")
@click.argument("path", type=click.Path(path_type=Path))
@_HOME
@click.option(
    "--shape",
    "shapes",
    multiple=True,
    metavar="FILE=LRS|HRS",
    help="The procedure shape of a file (its name, or its domain name), overriding the paper's "
    "table and BFS/DFS in the name; repeatable.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Let a file take a domain name already registered for another file.",
)
def import_sop_maze(path: Path, home: Path | None, shapes: tuple[str, ...], replace: bool) -> None:
    """Import PATH: one SOP-Maze raw-data JSON file or a folder of them.

    Each file becomes the domain sopmaze/<name> (answer-only), runnable with `sopgym run`:
    the 23 published scenarios by their paper index and title, other files by an ASCII slug
    and a digest of the name. Bad input is one line naming file and record, and nothing is
    registered; so is a name taken by another file (unless --replace).
    """
    from sopgym.importers.maze_names import SHAPES, domain_name, name_digest
    from sopgym.importers.sopmaze import MazeInputError, build_domain, maze_files, read_file

    _use_home(home)
    files = maze_files(path) if path.exists() else []
    if not files:
        _bad_input(f"no SOP-Maze *.json file at {path}")
    overrides = _shape_overrides(shapes, {f: domain_name(f) for f in files}, SHAPES)
    parsed = []
    for file in files:
        try:
            parsed.append(read_file(file, overrides.get(file)))
        except MazeInputError as error:
            _bad_input(str(error))
    for name, twins in _same_names(parsed).items():  # one scenario twice in the folder
        for found in twins:
            found.name = f"{name}_{name_digest(found.path)}"
        echo(f"  warning: {len(twins)} files name {name}; each keeps a digest of its "
                   f"file name: {', '.join(printable(t.name) for t in twins)}")  # fmt: skip
    try:
        known = read_index()
    except ImportIndexError as error:
        raise click.ClickException(str(error)) from None
    for found in parsed:
        before = known.get(found.name)
        if before and before.path != found.path.resolve() and not replace:
            _bad_input(f"{found.name} is already {before.path}; not replaced by "
                       f"{found.path} (use --replace)")  # fmt: skip
    for found in parsed:
        domain = build_domain(found)
        flagged = len(found.records) - len(found.scorable)
        note = f" ({flagged} unscorable: run sopgym audit sop-maze)" if flagged else ""
        echo(f"imported {domain.name}: {len(found.records)} items, {found.shape}{note}"
                   f"  <- {printable(found.path.name)}")  # fmt: skip
    entries = [ImportEntry(p.name, p.path.resolve(), shape=overrides.get(p.path)) for p in parsed]
    try:
        where = register(entries)
    except (OSError, ImportIndexError) as error:
        raise click.ClickException(f"cannot write the import registry: {error}") from None
    echo(f"registered {len(parsed)} file(s) in {where}")


def _same_names(parsed: list[Any]) -> dict[str, list[Any]]:
    """The domain names more than one parsed file takes, with those files."""
    by_name: dict[str, list[Any]] = {}
    for found in parsed:
        by_name.setdefault(found.name, []).append(found)
    return {name: files for name, files in by_name.items() if len(files) > 1}


def _shape_overrides(
    given: tuple[str, ...], names: dict[Path, str], shapes: tuple[str, ...]
) -> dict[Path, str]:
    """``--shape FILE=LRS|HRS`` by file: FILE is a file's name, stem or domain name."""
    out: dict[Path, str] = {}
    for item in given:
        file, _, shape = item.rpartition("=")
        if shape not in shapes or not file:
            _bad_input(f"--shape {item}: expected FILE=LRS or FILE=HRS")
        matched = [p for p, n in names.items() if file in (p.name, p.stem, n, n.split("/")[-1])]
        if not matched:
            _bad_input(f"--shape {item}: no file {file!r} at the imported path")
        out.update(dict.fromkeys(matched, shape))
    return out


def _bad_input(message: str) -> NoReturn:
    echo(f"error: {message}", err=True)
    sys.exit(2)


@import_group.command("list")
@_HOME
def list_imports(home: Path | None) -> None:
    """List imported benchmarks and where they live."""
    _use_home(home)
    try:
        index = read_index()
    except ImportIndexError as error:
        raise click.ClickException(str(error)) from None
    if not index:
        echo("no imported benchmarks")
    for name, entry in sorted(index.items()):
        inputs = f"  inputs: {','.join(entry.input_columns)}" if entry.input_columns else ""
        echo(f"{name}  {entry.path}{inputs}")


@click.group("audit")
def audit_group() -> None:
    """Audit published benchmarks' data and tools."""


@audit_group.command("sop-bench")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("sop-bench-audit"),
    show_default=True,
    help="Folder for the reports (<name>.json, <name>.md, summary.*).",
)
@click.option("--max-rows", type=click.IntRange(1), default=None, help="Call tools on N rows.")
@_INPUTS
@_TIMEOUT
def audit_sop_bench(
    path: Path, out: Path, max_rows: int | None, input_columns: str | None, timeout: float
) -> None:
    """Audit PATH (a benchmark folder, a folder of them, or a SOP-Bench checkout).

    Loads each benchmark's tools.py in a child process of its own, with a time limit, and
    calls every tool on every row.
    """
    from sopgym.core.isolated import run_isolated
    from sopgym.importers.audit import AuditReport, audit_benchmark
    from sopgym.importers.report import write_reports

    given = _columns(input_columns)
    reports: list[AuditReport] = []
    for folder in _folders(path):
        try:
            report = run_isolated(
                audit_benchmark, (folder, given, max_rows), timeout, read_only=True
            )
        except Exception as error:  # the audit of one benchmark must not stop the others
            echo(f"{folder.name}: audit failed: {type(error).__name__}: {error}")
            continue
        reports.append(report)
        info = len(report.findings) - report.defect_count
        kinds = ", ".join(dict.fromkeys(f.kind for f in report.findings)) or "clean"
        echo(f"{report.name}: {report.defect_count} defect(s), {info} info  [{kinds}]")
    write_reports(reports, out)
    echo(f"reports: {out}")


@audit_group.command("sop-maze")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("sop-maze-audit"),
    show_default=True,
    help="Folder for the reports (<name>.json, <name>.md, summary.*).",
)
def audit_sop_maze(path: Path, out: Path) -> None:
    """Audit PATH (a SOP-Maze raw-data JSON file or a folder of them): what makes an item
    unscorable (a target invalid against its own schema in a compared key, an empty target, a
    repeat), targets scored although they break their schema where nothing is compared, unknown
    schema keywords, and files that cannot be read; per item excluded, the reason."""
    from sopgym.importers.maze_audit import audit_file, write_maze_reports
    from sopgym.importers.sopmaze import maze_files

    files = maze_files(path) if path.exists() else []
    if not files:
        _bad_input(f"no SOP-Maze *.json file at {path}")
    audits = []
    for file in files:
        audit = audit_file(file)
        audits.append(audit)
        kinds = ", ".join(audit.kinds) or "clean"
        echo(f"{audit.slug}: {audit.scorable} scorable of {audit.items}  [{kinds}]")
    write_maze_reports(audits, out)
    echo(f"reports: {out}")

"""Materialising a domain's data: generate once per (pack source, seed), derive gold, cache.

The folder layout is ``<root>/<domain>/<fingerprint>/`` with ``tables/*.jsonl``, ``files/``
(anything else the generator writes, e.g. images), ``tasks.jsonl`` and ``gold.jsonl``.
Generation writes into a temporary folder and renames it into place, so concurrent
processes never see half a dataset.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from sopgym.core.dialogue import SimulatedUser
from sopgym.core.domain import DomainPack, PolicyRun
from sopgym.core.tables import Tables
from sopgym.core.tasks import Gold, Task
from sopgym.types import JSON


def default_root() -> Path:
    return Path(os.environ.get("SOPGYM_DATA") or Path.home() / ".cache" / "sopgym")


@dataclass
class DomainData:
    domain: DomainPack
    path: Path
    tables: Tables
    tasks: list[Task]
    gold: dict[str, Gold]

    @property
    def files_dir(self) -> Path:
        return self.path / "files"


def data_path(domain: DomainPack, root: Path | None = None) -> Path:
    return (root or default_root()) / domain.name.replace("/", "__") / domain.fingerprint()


def materialize(domain: DomainPack, root: Path | None = None) -> Path:
    """Make sure the domain's data exists on disk and return its folder."""
    final = data_path(domain, root)
    if (final / "gold.jsonl").exists():
        _owner_only(final / "gold.jsonl")  # a cache written before gold was kept 0600
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".gen-", dir=final.parent))
    try:
        _generate_into(domain, staging)
        try:
            staging.rename(final)
        except OSError:
            if not (final / "gold.jsonl").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def _generate_into(domain: DomainPack, folder: Path) -> None:
    files_dir = folder / "files"
    files_dir.mkdir()
    generated = domain.generate(domain.seed, files_dir)
    tables = Tables(generated.tables)
    tables.index_all(domain.index_keys)  # duplicate keys fail here, at generation
    tables.save(folder / "tables")
    gold = [
        derive_gold(domain, tables, files_dir, task, generated.users.get(task.id))
        for task in generated.tasks
    ]
    _write_jsonl(folder / "tasks.jsonl", [t.to_json() for t in generated.tasks])
    _write_jsonl(folder / "gold.jsonl", [g.to_json() for g in gold])
    _owner_only(folder / "gold.jsonl")


def _owner_only(path: Path) -> None:
    """The answers are readable by their owner only (mode 0600): other users of the machine
    cannot read them (processes of the same user still can: docs/reliability.md)."""
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)


def derive_gold(
    domain: DomainPack, tables: Tables, files_dir: Path, task: Task, user: JSON | None = None
) -> Gold:
    """Run the reference policy on one task against the real tool implementations (and, for
    a dialogue task, the pack's simulated user with the task's private ``user`` profile), from the
    task's own initial state on stateful domains (its final state is part of the gold)."""
    ctx = domain.context(tables, files_dir, task)
    simulated = None
    if domain.user is not None and user is not None:
        simulated = SimulatedUser(domain.user, user, domain.seed, task.id, task.conversation)
    run = PolicyRun(domain.tool_map(), ctx, simulated)
    solution = domain.solve(task, run)
    return Gold(
        task_id=task.id,
        calls=run.calls,
        decisions=solution.decisions,
        outputs=solution.outputs,
        final_state=ctx.final_state(),
        reference_calls=domain.reference_policy,
        user=user,
        messages=run.messages,
    )


def load(domain: DomainPack, root: Path | None = None) -> DomainData:
    path = materialize(domain, root)
    tables = Tables.load(path / "tables")
    tables.index_all(domain.index_keys)
    tasks = [Task.from_json(r) for r in _read_jsonl(path / "tasks.jsonl")]
    gold = {g.task_id: g for g in (Gold.from_json(r) for r in _read_jsonl(path / "gold.jsonl"))}
    return DomainData(domain=domain, path=path, tables=tables, tasks=tasks, gold=gold)


def load_tasks(path: Path) -> tuple[list[Task], dict[str, Gold]]:
    """Tasks and gold of a materialised folder, without loading the tables."""
    tasks = [Task.from_json(r) for r in _read_jsonl(path / "tasks.jsonl")]
    gold = {g.task_id: g for g in (Gold.from_json(r) for r in _read_jsonl(path / "gold.jsonl"))}
    return tasks, gold


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def _read_jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]

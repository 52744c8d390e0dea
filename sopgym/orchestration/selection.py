"""Which of its domains' tasks a run takes: ``--tasks``, ``--match``, ``--sample``, ``--limit``.

The selection is part of the run's config, so a resume takes the same tasks again: ids and
globs are matched against the domain's task list, and a sample is drawn from a generator
seeded by the run's seed and the domain's name (the same draw in every process, every time).
"""

from __future__ import annotations

import random
from fnmatch import fnmatchcase

from sopgym.core.exceptions import UsageError
from sopgym.core.tasks import Task


class SelectionError(UsageError, ValueError):
    """The options name tasks the run's domains do not have, or select none at all."""


def select_tasks(
    tasks_by_domain: dict[str, list[Task]],
    *,
    task_ids: list[str] | None = None,
    match: str | None = None,
    sample: int | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> list[Task]:
    """Each domain's tasks kept by ``task_ids`` and the id glob ``match`` (both when given),
    then ``sample`` of them drawn at random (in their listed order) or the first ``limit``."""
    if task_ids is not None:
        known = {t.id for tasks in tasks_by_domain.values() for t in tasks}
        unknown = [i for i in task_ids if i not in known]
        if unknown:
            raise SelectionError(
                f"--tasks: no task {', '.join(unknown)} in {', '.join(tasks_by_domain)}"
            )
    wanted = set(task_ids) if task_ids is not None else None
    chosen: list[Task] = []
    for domain, tasks in tasks_by_domain.items():
        kept = [
            t
            for t in tasks
            if (wanted is None or t.id in wanted) and (match is None or fnmatchcase(t.id, match))
        ]
        if sample is not None and sample < len(kept):
            drawn = set(random.Random(f"{seed}|{domain}").sample(range(len(kept)), sample))
            kept = [t for index, t in enumerate(kept) if index in drawn]
        chosen += kept[:limit] if limit else kept
    if not chosen:
        raise SelectionError(
            f"--match {match!r}: no task id matches in {', '.join(tasks_by_domain)}"
            if match is not None
            else f"no tasks in {', '.join(tasks_by_domain)}"
        )
    return chosen

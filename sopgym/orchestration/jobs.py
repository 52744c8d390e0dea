"""The agent worker's job: one typed record, built in one place for every driver.

``sopgym run`` (:mod:`.runner`), shard mode (:mod:`.shards`) and the load test
(:mod:`.loadtest`) all hand an agent worker the same JSON line
(:func:`sopgym.agents.worker.parse_job` reads it). Built here once, so no driver can drop a key
another sends: a shard's job carries the trial and its seed exactly as a local run's does, and
a seeded sharded run replays like a local one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sopgym.core.tasks import Task
from sopgym.types import JSON


def trial_seed(seed: int, trial: int) -> int:
    """The seed of one trial: the run's own for the first, one derived from it for each
    other, so trials draw differently and the same run seed replays them all."""
    if trial == 0:
        return seed
    digest = hashlib.blake2b(f"{seed}|trial|{trial}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big")


@dataclass(frozen=True)
class Job:
    """One episode for an agent worker: the task's inputs (those of its SOP variant, see
    :meth:`Task.inputs_for`), never where its gold lives.

    ``replay`` is the oracle's alone (:func:`sopgym.agents.oracle.replay_of`);
    ``traceparent`` makes the worker's spans children of the driver's task span.
    """

    task: JSON
    run_id: str
    trial: int = 0
    seed: int = 0  # the run's seed; the job carries the trial's own (trial_seed)
    distractors: int = 0
    sop_variant: str = "clean"
    replay: JSON | None = None
    traceparent: str | None = None

    def to_json(self) -> JSON:
        """The job line's object (keys absent rather than null where a worker needs none)."""
        job: JSON = {
            "task": Task.from_json(self.task).as_given(self.sop_variant),
            "distractors": self.distractors,
            "sop_variant": self.sop_variant,
            "run_id": self.run_id,
            "trial": self.trial,
            "seed": trial_seed(self.seed, self.trial),
        }
        if self.traceparent:
            job["traceparent"] = self.traceparent
        if self.replay is not None:
            job["replay"] = self.replay
        return job

"""The agent worker's job (:class:`~sopgym.evaluation.records.Job`) and a trial's seed
(:func:`~sopgym.evaluation.records.trial_seed`): the typed records live in
:mod:`sopgym.evaluation.records`; this module keeps the names drivers import.

``sopgym run`` (:mod:`.runner`), shard mode (:mod:`.shards`) and the load test
(:mod:`.loadtest`) all hand an agent worker the same JSON line (:meth:`Job.to_json`;
:func:`sopgym.agents.worker.parse_job` reads it).
"""

from __future__ import annotations

from sopgym.evaluation.records import Job, trial_seed

__all__ = ["Job", "trial_seed"]

"""A run folder for episodes played outside ``sopgym run``: through the client SDK, the MCP
door or the environment API (``sopgym env-serve --run-dir``), written through the runner's
:class:`~sopgym.runs.folder.RunFolder` as ``sopgym run`` writes its own.

A :class:`RunRecorder` writes what ``sopgym run`` writes (``config.json``, ``results.jsonl``,
``summary.json``): each episode's gateway record, scored by the one
:func:`~sopgym.evaluation.scoring.score_episode` against the gold, one row per episode as it
ends; the summary when the recorder closes. ``sopgym view``, ``show``, ``export``, ``report``
and ``compare`` then read an external harness's episodes beside ours. A task played again is
its next trial; the summary covers the tasks played (``config.json`` names them)::

    with RunRecorder(Path("runs/my-harness"), ["patient_intake"], agent="my-harness") as rec:
        episode = client.open(task_id, "patient_intake")
        ...  # the harness's calls
        episode.finish(outputs)
        rec.record(client, episode)  # or (client, episode_id, admin_token): MCP episodes
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sopgym.orchestration.runner import Runner
from sopgym.runs.records import RunConfig, RunSummary, WorkerReport
from sopgym.types import JSON

if TYPE_CHECKING:
    from sopgym.client import Episode
    from sopgym.client.transports import GatewayClientProtocol
    from sopgym.core.tasks import Task


class RunRecorder:
    """Episodes of ``domains`` into the new run folder ``run_dir`` (a folder that is a run
    already is a :class:`FileExistsError`); thread-safe, so one recorder serves a pool."""

    def __init__(
        self,
        run_dir: Path,
        domains: list[str],
        *,
        agent: str = "sdk",
        model: str = "unknown",
        data_root: Path | None = None,
        source: str = "sdk",
    ) -> None:
        if (run_dir / "config.json").exists():
            raise FileExistsError(f"{run_dir} is a run already")
        config = RunConfig(domains=list(domains), agent=agent, model=model, workers=0, trace=False)
        self.runner = Runner(config, run_dir, data_root)
        self.runner.prepare()  # loads the domains, takes the run's lock, writes config.json
        self.tasks = {
            (name, task.id): task for name, data in self.runner.data.items() for task in data.tasks
        }
        self.runner.folder.update_config(source={"kind": source})
        self.played: dict[tuple[str, str], int] = {}  # (domain, task) -> episodes recorded
        self._lock = threading.Lock()
        self.closed = False

    @property
    def run_dir(self) -> Path:
        return self.runner.paths.root

    def record(
        self,
        client: GatewayClientProtocol,
        episode: Episode | str,
        token: str | None = None,
        *,
        llm_calls: list[JSON] | None = None,
    ) -> JSON:
        """Read an episode's record at the gateway and record it (finished or not: an
        unfinished one is scored as incomplete); the row written. ``episode``: an SDK
        :class:`~sopgym.client.Episode`, or an episode id with a ``token`` that may read it
        (its own, or the gateway's admin token for an episode an MCP client played)."""
        if isinstance(episode, str):
            if token is None:
                raise ValueError("an episode given by id needs a token that may read it")
            record = client.record(episode, token)
        else:
            record = client.record(episode.id, token or episode.token, episode.replica)
        return self.record_trajectory(record, llm_calls=llm_calls)

    def record_trajectory(
        self, record: JSON, *, llm_calls: list[JSON] | None = None, elapsed_s: float | None = None
    ) -> JSON:
        """Record an episode from its gateway record (``GET /v1/episodes/<id>``: it names its
        task and domain); :class:`KeyError` for a task the run's domains do not have."""
        key = (str(record.get("domain")), str(record.get("task_id")))
        task: Task | None = self.tasks.get(key)
        if task is None:
            domains = ", ".join(self.runner.config.domains)
            raise KeyError(f"no task {key[1]!r} in {key[0]!r} (this run records {domains})")
        finished = bool(record.get("finished"))
        report = WorkerReport(
            task_id=task.id,
            domain=task.domain,
            episode_id=record.get("episode_id"),
            status="finished" if finished else "failed",
            error=None if finished else "the episode was not finished",
            elapsed_s=elapsed_s,
            llm_calls=llm_calls or [],
        )
        with self._lock:
            if self.closed:
                raise RuntimeError("the recorder is closed")
            trial = self.played.get(key, 0)
            self.played[key] = trial + 1
            row: JSON = self.runner.result_row(task, report, record, trial)
            self.runner.folder.append_result(row)
        return row

    def close(self) -> RunSummary:
        """Write the summary over the tasks played (each with as many trials as the most
        played one: a task played fewer times has its missing trials counted incomplete) and
        let go of the run; the summary."""
        with self._lock:
            if self.closed:
                return RunSummary.read(self.runner.paths.summary)
            self.closed = True
            self.runner.folder.close_results()
            tasks = [self.tasks[key] for key in self.played]
            trials = max(self.played.values(), default=1)
            self.runner.replan(
                tasks, trials=trials, task_ids=[t.id for t in tasks], task_count=len(tasks)
            )
            try:
                return self.runner.write_summary(tasks)
            finally:
                self.runner.release()

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def recorder_for(run_dir: Path | None, domains: list[str], **options: Any) -> RunRecorder | None:
    """A recorder when a run folder is asked for (``--run-dir``), else None."""
    return RunRecorder(run_dir, domains, **options) if run_dir is not None else None

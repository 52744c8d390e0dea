"""``sopgym run``: materialise data, start the stack, drive agent workers, score, summarise.

Results are appended to ``runs/<run-id>/results.jsonl`` as tasks finish (one whole line each),
so an interrupted run can be resumed: tasks already recorded are kept and the rest run.
"""

from __future__ import annotations

import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sopgym.agents.client import GatewayClient
from sopgym.core import dataset
from sopgym.core.dataset import DomainData
from sopgym.core.jsonio import JsonlAppender, dumps, read_jsonl_prefix, write_atomic
from sopgym.core.registry import load_domain
from sopgym.core.scoring import TaskScore, score_task, summarize
from sopgym.core.tasks import Task
from sopgym.core.trajectory import Trajectory
from sopgym.processes import ManagedProcess, sopgym_command
from sopgym.stack import Stack, embedded_stack

JSON = dict[str, Any]


@dataclass
class RunConfig:
    domains: list[str]
    agent: str = "oracle"
    model: str = "scripted"
    workers: int = 2
    distractors: int = 0
    sop_variant: str = "clean"
    limit: int | None = None
    task_timeout: float = 300.0
    agent_options: JSON = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: JSON) -> RunConfig:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


@dataclass
class RunPaths:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"


Progress = Callable[[JSON], None]


class Runner:
    def __init__(self, config: RunConfig, run_dir: Path, data_root: Path | None = None) -> None:
        self.config, self.paths, self.data_root = config, RunPaths(run_dir), data_root
        self.data: dict[str, DomainData] = {}

    # ---- preparation ----
    def prepare(self) -> list[Task]:
        """Write/verify the run's config and load every domain's tasks; return those to run."""
        self.paths.root.mkdir(parents=True, exist_ok=True)
        if not self.paths.config.exists():
            write_atomic(self.paths.config, dumps(asdict(self.config)))
        for name in self.config.domains:
            self.data[name] = dataset.load(load_domain(name), self.data_root)
        return [t for name in self.config.domains for t in self.tasks_of(name)]

    def tasks_of(self, domain: str) -> list[Task]:
        tasks = self.data[domain].tasks
        return tasks[: self.config.limit] if self.config.limit else tasks

    def pending(self, tasks: list[Task]) -> list[Task]:
        done = {r["task_id"] for r in read_jsonl_prefix(self.paths.results, repair=True)}
        return [t for t in tasks if t.id not in done]

    # ---- execution ----
    def execute(self, tasks: list[Task], progress: Progress | None = None) -> JSON:
        todo = self.pending(tasks)
        if todo:
            with embedded_stack(
                self.config.domains, self.paths.logs, self.data_root, self.config.distractors
            ) as stack:
                self._drive(stack, todo, progress)
        return self.write_summary(tasks)

    def _drive(self, stack: Stack, todo: list[Task], progress: Progress | None) -> None:
        jobs: queue.Queue[Task | None] = queue.Queue()
        for task in todo:
            jobs.put(task)
        workers = max(1, min(self.config.workers, len(todo)))
        for _ in range(workers):
            jobs.put(None)
        appender = JsonlAppender(self.paths.results)
        lock = threading.Lock()
        admin = GatewayClient(stack.gateway_url)
        failures: list[BaseException] = []

        def record(task: Task, report: JSON) -> None:
            row = self._score(admin, stack.admin_token, task, report)
            with lock:
                appender.append(row)
            if progress:
                progress(row)

        def work(index: int) -> None:
            try:
                self._worker_loop(stack, index, jobs, record)
            except BaseException as error:  # surfaced in the main thread
                failures.append(error)

        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(workers)]
        try:
            for thread in threads:
                thread.start()
            while any(t.is_alive() for t in threads):
                for thread in threads:
                    thread.join(0.2)
        finally:
            appender.close()
            admin.close()
        if failures:
            raise failures[0]

    def _worker_loop(
        self,
        stack: Stack,
        index: int,
        jobs: queue.Queue[Task | None],
        record: Callable[[Task, JSON], None],
    ) -> None:
        worker = self._spawn_worker(stack, index)
        while (task := jobs.get()) is not None:
            job = {
                "task": task.to_json(),
                "data_dir": str(self.data[task.domain].path),
                "distractors": self.config.distractors,
                "sop_variant": self.config.sop_variant,
                "run_id": self.paths.root.name,
            }
            line = None
            if worker.popen.poll() is None:
                try:
                    worker.popen.stdin.write(orjson.dumps(job).decode() + "\n")  # type: ignore[union-attr]
                    worker.popen.stdin.flush()  # type: ignore[union-attr]
                    line = worker.popen.stdout.readline()  # type: ignore[union-attr]
                except (BrokenPipeError, OSError):
                    line = None
            if line:
                record(task, orjson.loads(line))
                continue
            # The worker died mid-task: the task is recorded as failed, a fresh worker goes on.
            record(
                task,
                {
                    "task_id": task.id,
                    "episode_id": None,
                    "status": "failed",
                    "error": f"agent worker exited: {worker.log_tail(5)}",
                },
            )
            worker.stop()
            worker = self._spawn_worker(stack, index)
        worker.stop()

    def _spawn_worker(self, stack: Stack, index: int) -> ManagedProcess:
        argv = sopgym_command(
            "agent-worker",
            "--gateway",
            stack.gateway_url,
            "--agent",
            self.config.agent,
            "--model",
            self.config.model,
            "--task-timeout",
            str(self.config.task_timeout),
            "--options",
            orjson.dumps(self.config.agent_options).decode(),
        )
        return stack.group.start(
            f"worker-{index}", argv, stack.logs / f"worker-{index}.log", pipes=True
        )

    def _score(self, admin: GatewayClient, admin_token: str, task: Task, report: JSON) -> JSON:
        domain_data = self.data[task.domain]
        trajectory = None
        if report.get("episode_id"):
            record = admin.record(report["episode_id"], admin_token)
            trajectory = Trajectory.from_json(record)
        gold = domain_data.gold[task.id]
        score = score_task(task.domain, trajectory, gold, domain_data.domain.output_schema)
        return {
            "task_id": task.id,
            "domain": task.domain,
            "agent": self.config.agent,
            "model": self.config.model,
            "episode_id": report.get("episode_id"),
            "status": report.get("status"),
            "error": report.get("error"),
            "elapsed_s": report.get("elapsed_s"),
            "llm_calls": report.get("llm_calls", []),
            "outputs": trajectory.outputs if trajectory else None,
            "gold_outputs": gold.outputs,
            "score": score.to_json(),
            "trajectory": trajectory.to_json() if trajectory else None,
        }

    # ---- summary ----
    def write_summary(self, tasks: list[Task]) -> JSON:
        """Summarise every task of the run; a task with no result counts as incomplete."""
        rows = {r["task_id"]: r for r in read_jsonl_prefix(self.paths.results)}
        scores = []
        for task in tasks:
            row = rows.get(task.id)
            if row is None:
                gold = self.data[task.domain].gold[task.id]
                scores.append(score_task(task.domain, None, gold, {}))
            else:
                scores.append(TaskScore(**row["score"]))
        summary = {
            "run_id": self.paths.root.name,
            "config": asdict(self.config),
            **summarize(scores),
            "missing": sorted(t.id for t in tasks if t.id not in rows),
        }
        write_atomic(self.paths.summary, dumps(summary))
        return summary

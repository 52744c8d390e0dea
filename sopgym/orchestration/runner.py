"""``sopgym run``: materialise data, start the stack, drive agent workers, score, summarise.

Results are appended to ``runs/<run-id>/results.jsonl`` as tasks finish (one whole line each),
so an interrupted run can be resumed: tasks already recorded are kept and the rest run. With
``trials`` > 1 every task runs that many times; a row is keyed by (task_id, trial).

Nothing is lost or doubled: one runner at a time holds a run (``run.lock``); on Ctrl-C or
SIGTERM dispatch stops, in-flight tasks get a few seconds to finish, the rest are stopped and
left unrecorded (interrupted: a resume runs them), and results.jsonl is closed only after
every writer thread is done. A task the infrastructure failed is recorded as ``infra_error``
with its cause; ``retry_infra`` drops those rows so that a resume runs exactly those tasks.
When the gateway or the model endpoint is down (:mod:`.liveness`), the tasks not dispatched
yet are recorded as such infrastructure errors at once instead of each failing in a worker.
"""

from __future__ import annotations

import atexit
import functools
import queue
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import msgspec
import orjson
from opentelemetry import trace
from opentelemetry.trace import Span, use_span

from sopgym.agents import is_ours, oracle, uses_model
from sopgym.agents.models import ModelSpec, parse_model_spec, preflight
from sopgym.client import GatewayClient, GatewayError, InfraError
from sopgym.client.transports import TRANSPORTS, transport
from sopgym.core import dataset
from sopgym.core.dataset import DomainData
from sopgym.core.jsonio import JsonlAppender
from sopgym.core.outcomes import INFRA_ERROR, outcome
from sopgym.core.plugins import user_import_path
from sopgym.core.registry import load_domain
from sopgym.core.tasks import Task
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.breakdown import tags
from sopgym.evaluation.llm_usage import llm_figures, read_prices
from sopgym.evaluation.paper_figures import summary_figures
from sopgym.evaluation.scoring import TaskScore, score_episode, summarize
from sopgym.evaluation.stats import tsr_intervals
from sopgym.evaluation.trials import TrialOutcome, summarize_trials
from sopgym.observability.semconv import CAPTURE_MESSAGES_ENV
from sopgym.observability.task_spans import TaskSpans, set_outcome
from sopgym.orchestration.dispatch import Attempt, WorkerLink
from sopgym.orchestration.liveness import EndpointWatch
from sopgym.orchestration.processes import ManagedProcess, sopgym_command
from sopgym.orchestration.provenance import provenance
from sopgym.orchestration.selection import select_tasks
from sopgym.orchestration.stack import Stack, embedded_stack
from sopgym.runs.folder import RunFolder
from sopgym.runs.records import (
    Job,
    RunConfig,
    RunSummary,
    WorkerReport,
    given,
    read_results,
    take_token_turns,
)
from sopgym.types import JSON


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


WORKER_GRACE_S = 5.0  # past --task-timeout, how long a worker may take to report the timeout

# After Ctrl-C/SIGTERM, how long in-flight tasks may still finish (and be recorded).
INTERRUPT_GRACE_S = 2.0


Progress = Callable[[JSON], None]


class Runner:
    def __init__(self, config: RunConfig, run_dir: Path, data_root: Path | None = None) -> None:
        self.config, self.data_root = config, data_root
        self.folder = RunFolder(run_dir)  # every file of the run is written through it
        self.paths = self.folder.paths
        self.data: dict[str, DomainData] = {}
        self._model_checked = False
        self.interrupted: list[Attempt] = []  # in flight at Ctrl-C/SIGTERM, not recorded
        # wall seconds of the last execute() by phase; "scoring" is spent within "tasks"
        self.phases: dict[str, float] = {}
        # every (domain, task, trial) the run selected, once prepared: a row for another is
        # refused by the readers (sopgym.runs.records)
        self.planned: set[tuple[str, str, int]] | None = None

    # ---- preparation ----
    def prepare(self) -> list[Task]:
        """Load every domain's tasks and select the run's (:class:`SelectionError` when the
        selection names unknown tasks or none), take the run's lock and write its config;
        return the selected tasks."""
        for name in self.config.domains:
            self.data[name] = dataset.load(load_domain(name), self.data_root)
        tasks = select_tasks(  # a selection of no task refuses before the folder exists
            {name: self.data[name].tasks for name in self.config.domains},
            task_ids=self.config.task_ids,
            match=self.config.match,
            sample=self.config.sample,
            limit=self.config.limit,
            seed=self.config.seed,
        )
        self.planned = {(t.domain, t.id, n) for t in tasks for n in range(self.config.trials)}
        self.folder.lock()
        self.folder.write_config(
            self.config,
            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            task_count=len(tasks),  # before a summary exists, `sopgym runs` counts on it
            provenance=provenance(self.config.domains),
        )
        return tasks

    def replan(self, tasks: list[Task], **recorded: object) -> None:
        """Change the prepared run's config (``RunConfig`` fields such as ``trials`` or
        ``task_ids``; other keys go to config.json only): a run played outside the runner learns
        its trials and tasks from what was played, and its rows are read against those."""
        fields = {k: v for k, v in recorded.items() if k in RunConfig.field_names()}
        self.config = msgspec.structs.replace(self.config, **fields)
        self.planned = {(t.domain, t.id, n) for t in tasks for n in range(self.config.trials)}
        self.folder.update_config(**recorded)

    def release(self) -> None:
        """Let go of ``run.lock`` before this process ends (``sopgym score`` called in a
        process that lives on: the folder then reads as finished, not running)."""
        self.folder.release()

    def repair(self) -> None:
        """Drop the corrupt rows of results.jsonl: not JSON objects, not result rows, a task
        recorded twice (the first is kept) or one the run did not select; their tasks run
        again."""
        read_results(self.paths.results, repair=True, drop_corrupt=True, planned=self.planned)

    def drop_infra_errors(self) -> int:
        """Remove the ``infra_error`` rows (rewritten atomically), so that a resume runs
        exactly those tasks again; how many there were."""
        rows = read_results(self.paths.results, repair=True, planned=self.planned)
        kept = [r for r in rows if r.get("status") != INFRA_ERROR]
        if len(kept) < len(rows):
            self.folder.write_results(kept)
        return len(rows) - len(kept)

    def pending(self, tasks: list[Task]) -> list[Attempt]:
        """Every (task, trial) the results do not hold yet, trial by trial."""
        rows = read_results(self.paths.results, repair=True, planned=self.planned)
        done = {(r["task_id"], r.get("trial", 0)) for r in rows}
        return [
            (t, trial)
            for trial in range(self.config.trials)
            for t in tasks
            if (t.id, trial) not in done
        ]

    # ---- execution ----
    def execute(self, tasks: list[Task], progress: Progress | None = None) -> RunSummary:
        todo = self.pending(tasks)
        self.phases = {"start-up": 0.0, "tasks": 0.0, "scoring": 0.0, "shut-down": 0.0}
        if todo:
            model = self._model_spec()
            self.check_model()
            started = time.perf_counter()
            with embedded_stack(
                self.config.domains,
                self.paths.logs,
                self.data_root,
                self.config.distractors,
                traces=self.paths.traces if self.config.trace else None,
                model=self.config.model if model is not None else None,
                injection_log=self.paths.injections,
                grpc=transport(self.config.transport).needs_grpc_door,
                seed=self.config.seed,
                faults=self.config.faults,
                service_groups=self.config.service_groups,
            ) as stack:
                if model is not None and model.scripted:
                    preflight(replace(model, base_url=stack.model_url))
                self.phases["start-up"] = time.perf_counter() - started
                self._drive(stack, todo, progress)
                stopping = time.perf_counter()
                self.phases["tasks"] = stopping - started - self.phases["start-up"]
            self.phases["shut-down"] = time.perf_counter() - stopping
        summarizing = time.perf_counter()
        summary = self.write_summary(tasks)
        self.phases["summary"] = time.perf_counter() - summarizing
        return summary

    def _drive(self, stack: Stack, todo: list[Attempt], progress: Progress | None) -> None:
        """Run ``todo`` with ``concurrency`` episodes in flight over the worker processes
        (:mod:`.dispatch`), recording each as it is scored."""
        jobs: queue.Queue[Attempt | None] = queue.Queue()
        for attempt in todo:
            jobs.put(attempt)
        in_flight = max(1, min(self.config.in_flight, len(todo)))
        processes = max(1, min(self.config.workers, in_flight))
        for _ in range(processes):
            jobs.put(None)
        token_log: list[JsonlAppender] = []  # tokens.jsonl, opened at the first recorded turn
        lock = threading.Lock()
        admin = GatewayClient(stack.gateway_url)
        failures: list[BaseException] = []
        stopping = threading.Event()
        watch = EndpointWatch(stack.gateway_url, self._live_model(stack))
        task_spans = TaskSpans(stack.env)  # each episode's trace root, with its outcome

        def record(attempt: Attempt, report: WorkerReport, span: object) -> None:
            task, trial = attempt
            turns = take_token_turns(report)  # the row's llm_calls keep no token arrays
            with use_span(span, end_on_exit=True) if isinstance(span, Span) else nullcontext():
                scoring = time.perf_counter()
                row = self._score(admin, stack.admin_token, task, trial, report)  # in the trace
                score = row["score"]
                set_outcome(
                    trace.get_current_span(),  # the task's root
                    outcome(score["completed"], score["success"], score["infra_error"]),
                    score["success"],
                    sorted(k for k, v in score["errors"].items() if v),
                    row["episode_id"],
                    score["scores"],
                )
            with lock:
                self.phases["scoring"] += time.perf_counter() - scoring
                if turns and not token_log:
                    token_log.append(JsonlAppender(self.paths.tokens))
                for turn in turns:  # before the row: a resumed task's turns are never lost
                    token_log[0].append(turn)
                self.folder.append_result(row)
            if progress:
                progress(row)
            if row["status"] == INFRA_ERROR and watch.down is None:
                # a dead gateway or model fails all the rest
                watch.check(row["error"] or "", report.error_type)

        def build_job(attempt: Attempt) -> tuple[JSON, object]:
            task, trial = attempt
            span, traceparent = task_spans.start(task.id, task.domain, self.paths.root.name,
                                                 trial)  # fmt: skip
            return self.job(task, trial, traceparent), span

        def not_run(attempt: Attempt) -> bool:
            if watch.down is None:
                return False
            task, trial = attempt  # no worker could play it: recorded, never dispatched
            span, _ = task_spans.start(task.id, task.domain, self.paths.root.name, trial)
            report = WorkerReport(task_id=task.id, domain=task.domain, trial=trial,
                                  status=INFRA_ERROR, error=f"not run: {watch.down}")  # fmt: skip
            record(attempt, report, span)
            return True

        links = [
            WorkerLink(
                functools.partial(self._spawn_worker, stack, index, share),
                share,
                self.config.task_timeout + 2 * WORKER_GRACE_S,  # the worker's own limit first
                build_job,
                record,
            )
            for index, share in enumerate(_shares(in_flight, processes))
        ]

        def work(link: WorkerLink) -> None:
            try:
                link.run(jobs, stopping, not_run)
            except BaseException as error:  # surfaced in the main thread
                if not stopping.is_set():
                    failures.append(error)

        threads = [threading.Thread(target=work, args=(link,), daemon=True) for link in links]
        try:
            for thread in threads:
                thread.start()
            _join(threads, None)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (the process group raises it)
            stopping.set()
            _drain(jobs, processes)
            deadline = time.monotonic() + INTERRUPT_GRACE_S
            for link in links:  # what is in flight may still finish (and be recorded)
                link.drain(max(0.0, deadline - time.monotonic()))
            for link in links:  # still busy: stopped, its tasks interrupted
                self.interrupted.extend(link.abandon())
            _join(threads, 10.0)
            raise
        finally:
            if not any(t.is_alive() for t in threads):  # never close under a writer
                self.folder.close_results()
                for log in token_log:
                    log.close()
            admin.close()
            task_spans.close()
        if failures:
            raise failures[0]

    def job(self, task: Task, trial: int, traceparent: str | None = None) -> JSON:
        """An agent worker's job: the task's inputs, never where its gold lives; the oracle
        alone gets what it replays; ``traceparent``: the task's root span (its trace)."""
        replay = None
        if self.config.agent == oracle.NAME:
            replay = oracle.replay_of(self.data[task.domain].gold[task.id])
        return Job(
            task.to_json(), self.paths.root.name, trial, self.config.seed,
            self.config.distractors, self.config.sop_variant, replay, traceparent,
        ).to_json()  # fmt: skip

    def _spawn_worker(self, stack: Stack, index: int, concurrency: int = 1) -> ManagedProcess:
        gateway = transport(self.config.transport).address(stack)
        argv = sopgym_command(
            "agent-worker",
            "--gateway",
            gateway,
            "--transport",
            self.config.transport,
            "--agent",
            self.config.agent,
            "--model",
            self.config.model,
            "--task-timeout",
            str(self.config.task_timeout),
            "--concurrency",
            str(concurrency),
            "--options",
            orjson.dumps(self._agent_options(stack)).decode(),
        )
        env = {**stack.env, CAPTURE_MESSAGES_ENV: str(self.config.capture_messages).lower()}
        if self._uses_user_code():  # the worker starts in an empty folder: give it the user's
            env["PYTHONPATH"] = user_import_path()
        return stack.group.start(
            f"worker-{index}", argv, stack.logs / f"worker-{index}.log", env=env, pipes=True,
            cwd=worker_folder(),
        )  # fmt: skip

    def _uses_user_code(self) -> bool:
        """Whether an agent worker imports code of the user's: a plug-in agent or transport
        (``module:attr``, or an entry point of a package installed beside it). Packs are
        never imported there: a job carries its task and, for the oracle, its replay."""
        return not (is_ours(self.config.agent) and self.config.transport in TRANSPORTS)

    def check_model(self) -> None:
        """Fail with one line (:class:`ModelUnavailable`) when the run's model cannot be used:
        a missing key or package, an unreachable endpoint. Checked once, before any task; the
        scripted model is checked when the stack has started it."""
        model = self._model_spec()
        if model is not None and not model.scripted and not self._model_checked:
            preflight(model)
            self._model_checked = True

    def _live_model(self, stack: Stack) -> ModelSpec | None:
        """The run's model as its agents reach it (the scripted one: the stack's server)."""
        model = self._model_spec()
        if model is not None and model.scripted:
            return replace(model, base_url=stack.model_url)
        return model

    def _model_spec(self) -> ModelSpec | None:
        """The run's model, or None for agents that use none (the oracle)."""
        if not uses_model(self.config.agent):
            return None
        return parse_model_spec(self.config.model, self.config.base_url)

    def _agent_options(self, stack: Stack) -> JSON:
        options = dict(self.config.agent_options)
        model = self._model_spec()
        base_url = stack.model_url if model is not None and model.scripted else self.config.base_url
        if model is not None and base_url:
            options["base_url"] = base_url
        return options

    def prices(self) -> JSON | None:
        """The run's price table (``--prices``), read when the summary is written."""
        return read_prices(Path(self.config.prices)) if self.config.prices else None

    def _score(
        self, admin: GatewayClient, admin_token: str, task: Task, trial: int, report: WorkerReport
    ) -> JSON:
        record = None
        if report.episode_id:
            try:
                record = admin.record(report.episode_id, admin_token)
            except InfraError as error:  # the gateway died: the episode cannot be scored
                cause = record_unreadable(report, error)
                report = msgspec.structs.replace(report, status=INFRA_ERROR, error=cause)
            except GatewayError as error:  # no such episode: the report named one that is not
                why = f"episode {report.episode_id} cannot be read: {error}"
                report = msgspec.structs.replace(report, status="failed", error=why)
            else:
                if (foreign := not_this_job(record, task, self.paths.root.name, trial)) is not None:
                    report = msgspec.structs.replace(report, status="failed", error=foreign)
                    record = None  # another task's episode is never scored as this one
        return self.result_row(task, report, record, trial)

    def result_row(
        self, task: Task, report: WorkerReport, record: JSON | None, trial: int = 0
    ) -> JSON:
        """The results.jsonl row of a task's ``trial``: the worker's ``report`` scored against
        the gold with the gateway's episode ``record`` (``sopgym merge`` scores shard results
        here too)."""
        domain_data = self.data[task.domain]
        trajectory = Trajectory.from_json(record) if record else None
        gold = domain_data.gold[task.id]
        infra = report.error or "failed" if report.status == INFRA_ERROR else None
        score = score_episode(
            domain_data.domain, task, trajectory, gold, infra, agent_error=report.error
        )
        score.answered_without_tools = report.answered_without_tools
        row: JSON = {
            "task_id": task.id,
            "trial": trial,
            "domain": task.domain,
            "agent": self.config.agent,
            "model": self.config.model,
            "episode_id": report.episode_id,
            "status": INFRA_ERROR if score.infra_error else report.status,
            "error": score.infra_error or report.error,
            "elapsed_s": report.elapsed_s,
            "llm_calls": report.llm_calls,
            "trace_flushed": given(report.trace_flushed),  # None: not traced
            "inputs": task.inputs,  # what the agent was given (the viewer shows it)
            "outputs": trajectory.outputs if trajectory else None,
            "gold_outputs": gold.outputs,
            "score": score.to_json(),
            "trajectory": trajectory.to_json() if trajectory else None,
        }
        if report.copied_example is True:  # the answer was the prompt's example, value for value
            row["copied_example"] = True
        if report.untagged_answer is True:  # the answer was its bare object, tags left off
            row["untagged_answer"] = True
        if report.tool_choice_refused is True:  # the endpoint's limit, not the agent's doing
            row["tool_choice_refused"] = True
        if report.claimed_infra is True:  # the agent raised an infrastructure error itself
            row["claimed_infra"] = True
        return row

    # ---- summary ----
    def write_summary(self, tasks: list[Task]) -> RunSummary:
        """Summarise every episode (task x trial) of the run, plus pass^k/pass@k over the
        trials; an episode with no result counts as incomplete."""
        read = read_results(self.paths.results, planned=self.planned)
        rows = {(r["task_id"], r.get("trial", 0)): r for r in read}
        scores, outcomes, missing = [], [], set()
        episodes: list[JSON] = []  # (domain, task, score) of each, for TSR's intervals
        infra: list[JSON] = []
        for trial in range(self.config.trials):
            for task in tasks:
                row = rows.get((task.id, trial))
                if row is None:
                    data = self.data[task.domain]
                    score = score_episode(data.domain, task, None, data.gold[task.id])
                    missing.add(task.id)
                else:
                    score = TaskScore(**row["score"])
                scores.append(score)
                outcomes.append(TrialOutcome(task.id, task.domain, trial, score.success))
                episodes.append({"domain": task.domain, "task_id": task.id, "score": vars(score)})
                if score.infra_error:
                    infra.append({"task_id": task.id, "domain": task.domain, "trial": trial,
                                  "cause": score.infra_error})  # fmt: skip
        # pass^k needs every trial of a task: a task the infrastructure failed in any trial
        # is left out of it (and listed under infra_failed)
        failed = {(i["domain"], i["task_id"]) for i in infra}
        outcomes = [o for o in outcomes if (o.domain, o.task_id) not in failed]
        summary = RunSummary(
            run_id=self.paths.root.name,
            config=msgspec.structs.replace(self.config),  # a copy: replan may change ours
            **summarize(scores),
            infra_failed=infra,
            # episodes whose spans the trace receiver did not confirm (down, or too slow)
            trace_loss=sum(r.get("trace_flushed") is False for r in rows.values()),
            missing=sorted(missing),
            trials=summarize_trials(outcomes, self.config.trials),
            tsr_intervals=tsr_intervals(episodes),
            llm=llm_figures(list(rows.values()), self.config.agent, self.prices()),
        )
        tagged = {(t.domain, t.id): tags(self.data[t.domain].gold[t.id]) for t in tasks}
        if paper := summary_figures(tasks, scores, tagged):  # the papers' own tables
            summary.paper = {**summary.paper, **paper}
        return self.folder.write_summary(summary)


@functools.cache
def worker_folder() -> Path:
    """The agent workers' working folder: an empty one of their own, not the runner's (whose
    runs/ hold earlier trials' gold), removed when the runner exits."""
    folder = Path(tempfile.mkdtemp(prefix="sopgym-worker-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _join(threads: list[threading.Thread], within: float | None) -> None:
    """Wait for the threads, at most ``within`` seconds (None: until they end), in short
    slices so that Ctrl-C and SIGTERM reach the main thread at once."""
    deadline = None if within is None else time.monotonic() + within
    while any(t.is_alive() for t in threads):
        if deadline is not None and time.monotonic() >= deadline:
            return
        for thread in threads:
            thread.join(0.05)


def _shares(in_flight: int, processes: int) -> list[int]:
    """``in_flight`` episodes spread over ``processes`` workers as evenly as they go."""
    return [in_flight // processes + (i < in_flight % processes) for i in range(processes)]


def _drain(jobs: queue.Queue[Attempt | None], workers: int) -> None:
    """Stop dispatch: take every queued job back and leave each worker its end marker."""
    while True:
        try:
            jobs.get_nowait()
        except queue.Empty:
            break
    for _ in range(workers):
        jobs.put(None)


def not_this_job(record: JSON, task: Task, run_id: str, trial: int) -> str | None:
    """Why the gateway's episode ``record`` is not the episode of this job (another task,
    domain, run or trial), or None when it is: a report names its episode, and only the
    gateway's record says whose it is."""
    meta = record.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    found = (record.get("task_id"), record.get("domain"), meta.get("run_id"), meta.get("trial", 0))
    wanted = (task.id, task.domain, run_id, trial)
    if found == wanted:
        return None
    return (
        f"episode {record.get('episode_id')} is task {found[0]!r} of {found[1]!r}, run "
        f"{found[2]!r}, trial {found[3]!r}; this job was {wanted[0]!r} trial {trial}"
    )


def record_unreadable(report: WorkerReport, error: InfraError) -> str:
    """The infra cause of a task whose episode record the gateway could not give: the worker's
    own infra cause when it had one, else the gateway's failure in the worker's format
    (``InfraError: ...``), so every row the dead gateway failed names it the same way."""
    if report.status == INFRA_ERROR and report.error:
        return report.error
    return f"{type(error).__name__}: {error} (reading the episode record)"

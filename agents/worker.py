"""An agent worker process: many episodes at once, jobs on stdin, one report line per job.

A job is ``{"task": {...}, "distractors": N, "sop_variant": "clean"}``, with ``"trial"``
(which of the run's repeats, 0-based) and ``"seed"`` (that trial's seed, sent with the model
calls) when the run sets them, ``"job_id"`` (the driver's name for it, echoed in the report)
and for the oracle alone ``"replay"`` (the gold it replays,
:func:`sopgym.agents.oracle.replay_of`): no job says where gold lives. The worker opens the
episode at the gateway, lets its agent solve the task (one-shot kinds: one model call,
:mod:`.oneshot`), finishes the episode and reports a
:class:`~sopgym.runs.records.WorkerReport` (``{"task_id", "trial", "episode_id",
"status", "error", "elapsed_s", ...}``); ``status`` is ``finished``, ``failed`` (the agent's
doing) or ``infra_error`` (a service, the gateway or the model endpoint failed it, as the
harness's own clients saw: an agent that raises an infrastructure error itself is flagged
``claimed_infra`` and judged on the episode), and an error crosses typed too
(``error_record``: its branch and class). It never imports a tool implementation: tools exist
for it only behind the gateway.

One process holds up to ``concurrency`` episodes in flight (:class:`EpisodePool`), a thread
each: an episode spends nearly all its time waiting on the model and the gateway, which
release the GIL, so threads keep every agent (LangGraph's synchronous graphs, the provider
SDKs, every transport's client) exactly as it is; bench/bench_concurrency.py holds them beside
one process per episode. Reports leave on the process's original standard output, which the
worker keeps for itself: the agents' own ``print`` (file descriptor 1 included) goes to the
log (standard error), so nothing an agent writes can pass for a report.
"""

from __future__ import annotations

import gc
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from typing import TextIO

import orjson
from opentelemetry import trace

from sopgym.agents import resolve_agent
from sopgym.agents.base import Agent, AgentContext
from sopgym.client import connect
from sopgym.client.transports import GatewayClientProtocol
from sopgym.core.exceptions import error_record
from sopgym.core.keepalive import Connections
from sopgym.core.outcomes import INFRA_ERROR, InfraFailure, harness_observed, observing
from sopgym.core.tasks import ONE_SHOT_KINDS, Task
from sopgym.observability import genai, tracing
from sopgym.runs.records import WorkerReport
from sopgym.types import JSON


def run_job(
    agent: Agent,
    client: GatewayClientProtocol,
    job: JSON,
    task_timeout: float,
    model: str | None = None,
) -> WorkerReport:
    """Work one job inside the episode's root span: one task episode is one trace."""
    task = Task.from_json(job["task"])
    if task.kind in ONE_SHOT_KINDS:
        from sopgym.agents.oneshot import one_shot_solver  # the model agents' modules

        agent = one_shot_solver(agent)
    run_id, trial = job.get("run_id"), job.get("trial")
    parent = tracing.parent_from_traceparent(job.get("traceparent"))  # the runner's task span
    with genai.task_span(task.id, task.domain, agent.name, model, run_id, trial, parent) as span:
        report = _run_episode(agent, client, job, task, task_timeout)
        genai.end_task(span, report.status, report.episode_id, report.error, report.llm_calls)
    if isinstance(job.get("job_id"), str):
        report.job_id = job["job_id"]
    return report


def _run_episode(
    agent: Agent, client: GatewayClientProtocol, job: JSON, task: Task, task_timeout: float
) -> WorkerReport:
    started = time.monotonic()
    report = WorkerReport(task_id=task.id, domain=task.domain, trial=job.get("trial", 0))
    context = AgentContext(
        replay=job.get("replay"),
        deadline=started + task_timeout,
        seed=job.get("seed"),
    )
    with observing() as seen:  # the failures the harness's own clients raise in this episode
        try:
            episode = client.open(
                task.id,
                task.domain,
                distractors=job.get("distractors"),
                sop_variant=job.get("sop_variant", "clean"),
                meta={"agent": agent.name, "run_id": job.get("run_id"),
                      "trial": job.get("trial", 0)},
            )  # fmt: skip
            report.episode_id, report.token = episode.id, episode.token
            context.episode_id = episode.id
            genai.record_tool_definitions(trace.get_current_span(), episode.tools)  # opt-in
            if episode.replica != client.base_url:  # a replicated gateway: where its record is
                report.replica = episode.replica
            outputs = agent.solve(task, episode, context)
            episode.finish(outputs)
            report.status = "finished"
        except InfraFailure as error:
            report.error = f"{type(error).__name__}: {error}"
            report.error_record = error_record(error)
            if harness_observed(error, seen):  # the infrastructure's fault, not the agent's
                report.status = INFRA_ERROR
            else:  # an agent's own claim of an infrastructure failure is its failure
                report.claimed_infra = True
                report.traceback = traceback.format_exc(limit=5)
        except Exception as error:  # one task's failure must not end the worker
            report.error = f"{type(error).__name__}: {error}"
            report.error_record = error_record(error)  # typed: read without parsing the text
            report.traceback = traceback.format_exc(limit=5)
    report.elapsed_s = round(time.monotonic() - started, 4)
    report.llm_calls = context.usage
    report.answered_without_tools = context.answered_without_tools
    if context.copied_example:
        report.copied_example = True
    if context.untagged_answer:
        report.untagged_answer = True
    if context.tool_choice_refused:
        report.tool_choice_refused = True
    return report


def concurrent_safe(agent: Agent) -> bool:
    """Whether one instance of ``agent`` may solve many episodes at once. Ours keep an
    episode's state in the episode's own objects and say so (``concurrent_safe = True``); an
    agent that does not say so gets an instance per episode in flight."""
    return getattr(agent, "concurrent_safe", False) is True


class EpisodePool:
    """Up to ``concurrency`` episodes of one agent at once, each on a thread of the pool.

    :meth:`acquire` waits for a free slot and :meth:`submit` runs a job in it, returning a
    future of its report. The pool's threads are started as jobs come (up to ``concurrency``)
    and kept: each serves one episode after another, keeping its connections to the gateway
    and the model open between them (a thread and two connections per episode cost the worker
    and the servers ~0.3 ms of CPU per model call at 300 in flight). An episode stuck past its
    time holds only its own thread: at ``task_timeout`` plus :attr:`GRACE_S` the pool answers
    the job itself (the agent's failure, as a worker killed for it was), frees the slot and
    lets a new thread take the stuck one's place; the stuck thread drops whatever it returns
    later, closes its connections and ends. Agents that are not :func:`concurrent_safe` get
    one instance per episode in flight, reused afterwards.
    """

    GRACE_S = 5.0  # past --task-timeout, how long an episode may take to report its timeout

    def __init__(
        self,
        agent_name: str,
        gateway_url: str,
        task_timeout: float,
        agent_options: JSON,
        transport: str = "http",
        concurrency: int = 1,
    ) -> None:
        self.task_timeout, self.concurrency = task_timeout, max(1, concurrency)
        self.model: str | None = agent_options.get("model")
        # resolved once: a plug-in's lookup reads every installed package's entry points
        factory = resolve_agent(agent_name).factory
        self._make: Callable[[], Agent] = lambda: factory(**agent_options)
        first = self._make()
        self._shared = first if concurrent_safe(first) else None
        self._spare: list[Agent] = [] if self._shared is not None else [first]
        self.client = connect(gateway_url, getattr(first, "transport", transport))
        self._slots = threading.Semaphore(self.concurrency)
        self._lock = threading.Lock()
        # id of each job's future -> (its deadline, the job, the future)
        self._running: dict[int, tuple[float, JSON, Future[WorkerReport]]] = {}
        self._jobs: queue.SimpleQueue[tuple[JSON, Future[WorkerReport]] | None] = (
            queue.SimpleQueue()
        )
        self._threads = 0  # threads serving the queue, the stuck ones not counted
        self._abandoned: set[int] = set()  # futures whose thread was replaced (timed out)
        self._watchdog: threading.Thread | None = None

    def acquire(self) -> None:
        """Wait for a free slot (the caller then submits one job)."""
        self._slots.acquire()

    def submit(self, job: JSON) -> Future[WorkerReport]:
        """Run ``job`` in a slot taken with :meth:`acquire`; the slot frees when it ends."""
        future: Future[WorkerReport] = Future()
        with self._lock:
            deadline = time.monotonic() + self.task_timeout + self.GRACE_S
            self._running[id(future)] = (deadline, job, future)
            if self._watchdog is None:
                self._watchdog = threading.Thread(target=self._watch, daemon=True)
                self._watchdog.start()
            start = self._threads < self.concurrency
            self._threads += start
        self._jobs.put((job, future))
        if start:
            threading.Thread(target=self._serve, daemon=True).start()
        return future

    def _serve(self) -> None:
        """One of the pool's threads: episodes, one after another, until the pool closes or
        an episode of this thread was given up on (another thread has its place now)."""
        try:
            while (item := self._jobs.get()) is not None:
                job, future = item
                self._work(job, future)
                with self._lock:
                    if id(future) in self._abandoned:
                        self._abandoned.discard(id(future))
                        return
        finally:
            Connections.close_thread()  # this thread's sockets end with it

    def _work(self, job: JSON, future: Future[WorkerReport]) -> None:
        agent = self._borrow()
        try:
            report = run_job(agent, self.client, job, self.task_timeout, self.model)
        except Exception as error:  # run_job catches the agent's errors: this one is ours
            cause = f"agent worker: {type(error).__name__}: {error}"
            report = _report_for(job, INFRA_ERROR, cause)
        self._give_back(agent)
        forget_converted_messages()  # the episode's conversation is over
        self._end(future, report)

    def _end(self, future: Future[WorkerReport], report: WorkerReport) -> None:
        """The job's one answer: the first of its episode's and the watchdog's counts. The
        slot frees only after the answer was handed on (the future's callbacks, which write
        the report, run inside ``set_result``): a driver that waits for every slot before it
        exits must find every report written, never a last wave lost with the process."""
        with self._lock:
            if self._running.pop(id(future), None) is None:
                return  # answered already (timed out): a late result is dropped
        try:
            future.set_result(report)
        finally:
            self._slots.release()

    def _watch(self) -> None:
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            with self._lock:
                late = [(job, f) for deadline, job, f in self._running.values() if deadline <= now]
                for _, future in late:  # their threads are stuck: new ones take their places
                    self._abandoned.add(id(future))
                    self._threads -= 1
            for job, future in late:
                why = f"no answer within --task-timeout {self.task_timeout:g} s"
                self._end(future, _report_for(job, "failed", why))

    def _borrow(self) -> Agent:
        if self._shared is not None:
            return self._shared
        with self._lock:
            if self._spare:
                return self._spare.pop()
        return self._make()

    def _give_back(self, agent: Agent) -> None:
        if self._shared is None:
            with self._lock:
                self._spare.append(agent)

    def close(self) -> None:
        """Let the pool's threads end (each closes its connections) and close the client."""
        with self._lock:
            threads, self._threads = self._threads, 0
        for _ in range(threads):
            self._jobs.put(None)
        self.client.close()


def freeze_start_up_heap() -> None:
    """Leave what start-up built out of the garbage collector's full passes (``gc.freeze``).

    A worker that has built its agent holds about a million objects from its imports
    (LangChain, LangGraph, the OpenAI SDK's types, pydantic's schemas) that live as long as
    the process; every full collection walked all of them again, ~75 ms each, about a tenth of
    the worker's CPU per model call in steady state (0.09 of 1.0 ms at 10 in flight, 384
    episodes). Frozen, a full pass walks only what episodes made since (~1 ms). Called once by
    the worker commands after their pool is built; objects made later are collected as
    before. The youngest generation is collected after 10,000 new objects instead of 700: a
    model call's LangGraph and LangChain objects outlive a few young collections each, and
    those passes cost 0.022 ms a call, 0.007 at the higher threshold."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])


def forget_converted_messages() -> None:
    """Drop this thread's converted messages (:mod:`sopgym.agents.chat_completions`): a
    thread that runs one episode after another must not keep the last one's conversation."""
    module = sys.modules.get("sopgym.agents.chat_completions")
    if module is not None:  # only loaded where an OpenAI-compatible model is used
        module.forget_thread()


def _report_for(job: JSON, status: str, error: str) -> WorkerReport:
    """The pool's own report on a job whose episode gave none."""
    task = job["task"]
    report = WorkerReport(task_id=task["id"], domain=task["domain"], trial=job.get("trial", 0),
                          status=status, error=error)  # fmt: skip
    if isinstance(job.get("job_id"), str):
        report.job_id = job["job_id"]
    return report


class TraceDelivery:
    """Sends episodes' spans before their reports, so that a later crash of this worker cannot
    take a finished episode's trace with it; but a trace receiver that is down must never slow
    the agents. Reports wait in a queue; one thread hands them on, each batch after a flush of
    the exporter, which a flusher thread of its own runs while the first waits for it at most
    :attr:`timeout_s`; every report that was waiting when the flush began is then released:
    with hundreds of episodes in flight one flush carries many episodes' spans. While a flush
    is still stuck, no other starts. Each report says whether its spans were confirmed
    delivered (``trace_flushed``): the run counts the episodes whose were not. (The flusher is
    one kept thread: a thread started per flush cost ~0.07 ms of CPU each.)"""

    timeout_s = 0.5

    def __init__(self, deliver: Callable[[WorkerReport], None]) -> None:
        self._deliver = deliver
        self._waiting: queue.SimpleQueue[WorkerReport | None] = queue.SimpleQueue()
        self._asked: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._flushed = threading.Event()
        self._flushing = False  # a flush asked for has not ended (it may be stuck)
        self._delivered = False
        self._flusher = threading.Thread(target=self._flush_loop, daemon=True,
                                         name="trace-flush")  # fmt: skip
        self._flusher.start()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="trace-delivery")
        self._thread.start()

    def send(self, report: WorkerReport) -> None:
        self._waiting.put(report)

    def close(self) -> None:
        """Deliver what is waiting, then stop."""
        self._waiting.put(None)
        self._thread.join()
        self._asked.put(False)  # the flusher ends once any stuck flush does

    def _loop(self) -> None:
        while True:
            batch = [self._waiting.get()]
            while not self._waiting.empty():
                batch.append(self._waiting.get())
            ending = None in batch
            reports = [r for r in batch if r is not None]
            if reports:
                flushed = self.flush()
                for report in reports:
                    report.trace_flushed = flushed
                    self._deliver(report)
            if ending:
                return

    def flush(self) -> bool:
        """Whether a flush begun now confirmed delivery within :attr:`timeout_s` (called from
        the delivery thread only)."""
        if self._flushing:
            return False  # the receiver is still not answering the last flush
        self._flushing = True
        self._flushed.clear()
        self._asked.put(True)
        return self._flushed.wait(self.timeout_s) and self._delivered

    def _flush_loop(self) -> None:
        while self._asked.get():
            try:
                self._delivered = tracing.flush()
            except Exception:  # an exporter's own failure: unconfirmed, and the next may try
                self._delivered = False
            finally:
                self._flushing = False
                self._flushed.set()


def parse_job(line: str) -> JSON:
    """One job line, checked as far as a worker needs before it opens an episode."""
    job = orjson.loads(line)
    if not isinstance(job, dict):
        raise ValueError("a job is a JSON object")
    task = job.get("task")
    if not isinstance(task, dict) or not all(
        isinstance(task.get(k), str) for k in ("id", "domain")
    ):
        raise ValueError('"task" must be an object with string "id" and "domain"')
    for key in ("trial", "seed"):
        value = job.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f'"{key}" must be an integer')
    if job.get("job_id") is not None and not isinstance(job["job_id"], str):
        raise ValueError('"job_id" must be a string')
    return job


def keep_stdout_for_reports() -> TextIO:
    """The process's standard output, kept for reports alone: file descriptor 1 (and
    ``sys.stdout``) now lead to standard error, the worker's log, so whatever an agent prints
    lands there and never in the report stream."""
    reports = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
    return reports


def serve(
    agent_name: str,
    gateway_url: str,
    task_timeout: float,
    agent_options: JSON,
    jobs: TextIO | None = None,
    out: TextIO | None = None,
    transport: str = "http",
    observe: Callable[[WorkerReport, JSON | None], None] | None = None,
    concurrency: int = 1,
    freeze_heap: bool = False,
) -> None:
    """Work jobs until stdin closes, up to ``concurrency`` at once; a report line per job, in
    the order they end (``job_id`` names the job when the driver gave one);
    ``observe(report, None)`` sees each report (metrics). By default the reports go to the
    process's own standard output, which agents can no longer write
    (:func:`keep_stdout_for_reports`). ``freeze_heap``: the command's own process, whose
    start-up heap is then frozen (:func:`freeze_start_up_heap`)."""
    jobs = sys.stdin if jobs is None else jobs
    out = keep_stdout_for_reports() if out is None else out
    pool = EpisodePool(agent_name, gateway_url, task_timeout, agent_options, transport, concurrency)
    if freeze_heap:  # the worker process's own loop (the command), not a caller's thread
        freeze_start_up_heap()
    writing = threading.Lock()

    def write(report: WorkerReport) -> None:
        line = orjson.dumps(report.to_json()).decode() + "\n"
        with writing:
            out.write(line)
            out.flush()
        if observe is not None:
            observe(report, None)

    delivery = TraceDelivery(write) if tracing.enabled() else None
    deliver = delivery.send if delivery is not None else write

    def done(future: Future[WorkerReport]) -> None:
        deliver(future.result())

    try:
        for line in jobs:
            if not line.strip():
                continue
            try:
                job = parse_job(line)
            except ValueError as error:  # a hand-fed worker answers a bad line and goes on
                write(WorkerReport(task_id=None, status="failed", error=f"invalid job: {error}"))
                continue
            pool.acquire()
            pool.submit(job).add_done_callback(done)
        for _ in range(pool.concurrency):  # every episode in flight ends before we leave
            pool.acquire()
    finally:
        if delivery is not None:
            delivery.close()
        pool.close()

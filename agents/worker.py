"""An agent worker process: takes jobs on stdin, answers one JSON line per job on stdout.

A job is ``{"task": {...}, "distractors": N, "sop_variant": "clean"}``, with ``"trial"``
(which of the run's repeats, 0-based) and ``"seed"`` (that trial's seed, sent with the model
calls) when the run sets them, and for the oracle alone ``"replay"`` (the gold it replays,
:func:`sopgym.agents.oracle.replay_of`): no job says where gold lives. The worker opens the
episode at the gateway, lets its agent solve the task (one-shot kinds: one model call,
:mod:`.oneshot`), finishes the episode and reports a
:class:`~sopgym.evaluation.records.WorkerReport` (``{"task_id", "trial", "episode_id",
"status", "error", "elapsed_s", ...}``); ``status`` is ``finished``, ``failed`` (the agent's
doing) or ``infra_error`` (a service, the gateway or the model endpoint failed it), and an
error crosses typed too (``error_record``: its branch and class). It never imports a tool
implementation: tools exist for it only behind the gateway.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import TextIO

import orjson
from opentelemetry import trace

from sopgym.agents import make_agent
from sopgym.agents.base import Agent, AgentContext
from sopgym.client import connect
from sopgym.client.transports import GatewayClientProtocol
from sopgym.core.exceptions import error_record
from sopgym.core.outcomes import INFRA_ERROR, InfraFailure
from sopgym.core.tasks import ONE_SHOT_KINDS, Task
from sopgym.evaluation.records import WorkerReport
from sopgym.observability import genai, tracing
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
    try:
        episode = client.open(
            task.id,
            task.domain,
            distractors=job.get("distractors"),
            sop_variant=job.get("sop_variant", "clean"),
            meta={"agent": agent.name, "run_id": job.get("run_id"), "trial": job.get("trial", 0)},
        )
        report.episode_id, report.token = episode.id, episode.token
        context.episode_id = episode.id
        genai.record_tool_definitions(trace.get_current_span(), episode.tools)  # opt-in
        if episode.replica != client.base_url:  # a replicated gateway: where its record is
            report.replica = episode.replica
        outputs = agent.solve(task, episode, context)
        episode.finish(outputs)
        report.status = "finished"
    except InfraFailure as error:  # the infrastructure's fault, not the agent's
        report.status = INFRA_ERROR
        report.error = f"{type(error).__name__}: {error}"
        report.error_record = error_record(error)
    except Exception as error:  # one task's failure must not end the worker
        report.error = f"{type(error).__name__}: {error}"
        report.error_record = error_record(error)  # typed: read without parsing the text
        report.traceback = traceback.format_exc(limit=5)
    report.elapsed_s = round(time.monotonic() - started, 4)
    report.llm_calls = context.usage
    report.answered_without_tools = context.answered_without_tools
    if context.copied_example:
        report.copied_example = True
    return report


class TraceDelivery:
    """Sends an episode's spans before its result, so that a later crash of this worker cannot
    take a finished episode's trace with it; but a trace receiver that is down must never slow
    the agents. The SDK exports a flush in the calling thread, retrying for seconds, so the
    flush runs in a thread of its own and the worker waits at most :attr:`timeout_s`; while
    one is still stuck, no other starts. Each report says whether its spans were confirmed
    delivered (``trace_flushed``): the run counts the episodes whose were not."""

    timeout_s = 0.5

    def __init__(self) -> None:
        self._pending: threading.Thread | None = None
        self._delivered = False

    def flush(self) -> bool:
        if self._pending is not None and self._pending.is_alive():
            return False  # the receiver is still not answering the last flush
        self._delivered = False
        self._pending = threading.Thread(target=self._flush, daemon=True)
        self._pending.start()
        self._pending.join(self.timeout_s)
        return self._delivered

    def _flush(self) -> None:
        self._delivered = tracing.flush()


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
    return job


def serve(
    agent_name: str,
    gateway_url: str,
    task_timeout: float,
    agent_options: JSON,
    jobs: TextIO = sys.stdin,
    out: TextIO = sys.stdout,
    transport: str = "http",
    observe: Callable[[WorkerReport, JSON | None], None] | None = None,
) -> None:
    """Work jobs until stdin closes; ``observe(report, None)`` sees each report (metrics)."""
    agent = make_agent(agent_name, **agent_options)
    client = connect(gateway_url, getattr(agent, "transport", transport))  # mcp: its own door
    delivery = TraceDelivery()
    try:
        for line in jobs:
            if not line.strip():
                continue
            try:
                job = parse_job(line)
            except ValueError as error:  # a hand-fed worker answers a bad line and goes on
                answer = {"task_id": None, "status": "failed", "error": f"invalid job: {error}"}
                report = WorkerReport.from_json(answer)
            else:
                report = run_job(agent, client, job, task_timeout, agent_options.get("model"))
                if tracing.enabled():
                    report.trace_flushed = delivery.flush()
                answer = report.to_json()
            out.write(orjson.dumps(answer).decode() + "\n")
            out.flush()
            if observe is not None:
                observe(report, None)
    finally:
        client.close()

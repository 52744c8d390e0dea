"""Many episodes in flight over a few agent worker processes: the runner's side of the pipe.

Each :class:`WorkerLink` owns one agent worker process and keeps up to ``capacity`` of its
jobs in flight (the worker runs them at once, :class:`sopgym.agents.worker.EpisodePool`). A
job line carries a fresh ``job_id``; the worker's report line echoes it, and a report is taken
only for a job the link still awaits, for that job's task and trial: a line that names no
awaited job (a late answer to a job already given up on, anything else on the channel) is
logged and dropped, never recorded against another task. Reports are read by a thread of the
link's own, which scores them (``record``) as they come, in any order.

A job past its time (``--task-timeout`` plus the worker's grace) is the agent's failure and its
slot is freed; a worker that exits fails its jobs in flight as infrastructure errors and a new
one takes its place. On an interrupt the links stop sending, wait a moment for what is in
flight, then stop their workers: the unrecorded jobs are left for a resume.
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
import orjson

from sopgym.core.outcomes import INFRA_ERROR
from sopgym.core.tasks import Task
from sopgym.orchestration.processes import ManagedProcess
from sopgym.runs.records import WorkerReport

Attempt = tuple[Task, int]  # a task and which trial of it


@dataclass
class InFlight:
    """A job the link has sent and awaits: its attempt, by when, and the caller's handle on it
    (the task's trace span)."""

    attempt: Attempt
    deadline: float
    handle: object = None


# The caller's side: send builds an attempt's job (``job_id`` added here) and returns the job
# and a handle; record scores an attempt's report (the handle given back); lost notes an
# attempt an interrupt left unrecorded.
BuildJob = Callable[[Attempt], tuple[dict, object]]
Record = Callable[[Attempt, WorkerReport, object], None]


class WorkerLink:
    """One agent worker process and the jobs it holds (at most ``capacity``)."""

    POLL_S = 0.1

    def __init__(
        self,
        spawn: Callable[[], ManagedProcess],
        capacity: int,
        time_limit: float,
        build_job: BuildJob,
        record: Record,
    ) -> None:
        self.capacity, self.time_limit = capacity, time_limit
        self._spawn, self._build_job, self._record = spawn, build_job, record
        self._lock = threading.Condition()
        self.in_flight: dict[str, InFlight] = {}
        # reports taken off in_flight that the reader is still recording: the link is not done
        # until they are (the run closes its results file once every link returned)
        self._recording = 0
        self.worker: ManagedProcess | None = None
        self._reader: threading.Thread | None = None
        self._exited = False  # the current worker's report stream ended

    # ---- the dispatching thread ----
    def run(
        self,
        jobs: queue.Queue[Attempt | None],
        stopping: threading.Event,
        not_run: Callable[[Attempt], bool],
    ) -> None:
        """Send jobs from ``jobs`` until its end marker, keeping ``capacity`` in flight, and
        return once every job sent is recorded (or ``stopping`` is set). ``not_run(attempt)``
        may record an attempt without running it (an endpoint found down): True if it did."""
        self._start_worker()
        ended = False
        try:
            while not stopping.is_set():
                self._expire()
                if self._exited:
                    if not self._fail_in_flight() and not ended:
                        # it died holding nothing: the next job fails in its place, so a
                        # worker that cannot start at all ends the run instead of looping
                        attempt = jobs.get()
                        if attempt is None:
                            ended = True
                        else:
                            self._fail(attempt, None, self._exit_cause())
                    if ended:
                        break
                    self._start_worker()
                with self._lock:
                    full = len(self.in_flight) >= self.capacity
                    idle = not self.in_flight and not self._recording
                if ended:
                    if idle:
                        break
                    with self._lock:
                        self._lock.wait(self.POLL_S)
                    continue
                if full:
                    with self._lock:
                        self._lock.wait(self.POLL_S)
                    continue
                try:
                    attempt = jobs.get(timeout=self.POLL_S)
                except queue.Empty:
                    continue
                if attempt is None:
                    ended = True
                    continue
                if not not_run(attempt):
                    self._send(attempt)
        finally:
            if not stopping.is_set():
                self.stop()

    def _send(self, attempt: Attempt) -> None:
        job, handle = self._build_job(attempt)
        job_id = job["job_id"] = secrets.token_hex(8)
        with self._lock:
            self.in_flight[job_id] = InFlight(attempt, time.monotonic() + self.time_limit, handle)
        worker = self.worker
        assert worker is not None and worker.popen.stdin is not None
        try:
            worker.popen.stdin.write(orjson.dumps(job).decode() + "\n")
            worker.popen.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):  # it died: the reader sees the end
            pass

    def _expire(self) -> None:
        """A job past its time is the agent's failure (the worker gave no report for it)."""
        now = time.monotonic()
        with self._lock:
            late = [k for k, v in self.in_flight.items() if v.deadline <= now]
            expired = [self.in_flight.pop(k) for k in late]
        for job in expired:
            task, trial = job.attempt
            why = f"no answer within --task-timeout (+ the worker's grace: {self.time_limit:g} s)"
            self._record(job.attempt, WorkerReport(task_id=task.id, domain=task.domain,
                                                   trial=trial, error=why), job.handle)  # fmt: skip

    def _exit_cause(self) -> str:
        return f"agent worker exited: {self.worker.log_tail(5) if self.worker else ''}"

    def _fail(self, attempt: Attempt, handle: object, cause: str) -> None:
        task, trial = attempt
        report = WorkerReport(task_id=task.id, domain=task.domain, trial=trial,
                              status=INFRA_ERROR, error=cause)  # fmt: skip
        self._record(attempt, report, handle)

    def _fail_in_flight(self) -> bool:
        """The worker exited: every job it held is an infrastructure error (whether it held
        any)."""
        cause = self._exit_cause()
        with self._lock:
            lost = list(self.in_flight.values())
            self.in_flight.clear()
        for job in lost:
            self._fail(job.attempt, job.handle, cause)
        if self.worker is not None:
            self.worker.stop()
        return bool(lost)

    # ---- the worker and its report stream ----
    def _start_worker(self) -> None:
        self.worker = self._spawn()
        self._exited = False
        self._reader = threading.Thread(target=self._read, args=(self.worker,), daemon=True)
        self._reader.start()

    def _read(self, worker: ManagedProcess) -> None:
        stream = worker.popen.stdout
        assert stream is not None
        try:
            for line in stream:
                self._take(line, worker)
        except (OSError, ValueError):  # closed under us by stop()
            pass
        with self._lock:
            if worker is self.worker:
                self._exited = True
            self._lock.notify_all()

    def _take(self, line: str, worker: ManagedProcess) -> None:
        """One report line: recorded against the job it names, if that job is awaited."""
        try:
            report = WorkerReport.from_json(orjson.loads(line))
        except (orjson.JSONDecodeError, msgspec.ValidationError, TypeError, ValueError):
            worker.note(f"runner: dropped a line that is not a report: {line[:200]!r}")
            return
        job_id = report.job_id if isinstance(report.job_id, str) else None
        with self._lock:
            job = self.in_flight.pop(job_id, None) if job_id else None
            self._recording += job is not None
            self._lock.notify_all()  # its slot is free
        if job is None:
            worker.note(f"runner: dropped a report for no awaited job: {line[:200]!r}")
            return
        try:
            task, trial = job.attempt
            if report.task_id != task.id or report.trial != trial:
                why = f"the worker's report named task {report.task_id!r} trial {report.trial}"
                report = WorkerReport(task_id=task.id, domain=task.domain, trial=trial, error=why)
            self._record(job.attempt, report, job.handle)
        finally:
            with self._lock:
                self._recording -= 1
                self._lock.notify_all()

    def drain(self, within: float) -> None:
        """Wait up to ``within`` seconds for the jobs in flight to be recorded."""
        deadline = time.monotonic() + within
        with self._lock:
            while (self.in_flight or self._recording) and time.monotonic() < deadline:
                self._lock.wait(min(self.POLL_S, max(0.0, deadline - time.monotonic())))

    def abandon(self) -> list[Attempt]:
        """Stop the worker; the attempts still in flight (unrecorded: a resume runs them)."""
        with self._lock:
            left = [job.attempt for job in self.in_flight.values()]
            self.in_flight.clear()
        self.stop()
        return left

    def stop(self) -> None:
        if self.worker is not None:
            worker, self.worker = self.worker, None
            with contextlib.suppress(OSError, ValueError):
                if worker.popen.stdin is not None:
                    worker.popen.stdin.close()  # the worker finishes what it holds and leaves
            worker.stop(grace=1.0)


class SharedWorker:
    """One agent worker process that many threads hand jobs to at once (the load test's
    slots): :meth:`exchange` sends a job under a fresh ``job_id`` and waits for the report that
    names it, while one reader thread hands each report line to its waiter."""

    def __init__(self, process: ManagedProcess) -> None:
        self.process, self.name, self.popen = process, process.name, process.popen
        self._waiting: dict[str, tuple[threading.Event, list[dict]]] = {}
        self._lock, self._writing = threading.Lock(), threading.Lock()
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def exchange(self, job: dict, timeout: float | None = None) -> dict | None:
        """The report on ``job``; None when the worker exits first; :class:`TimeoutError`
        when none comes within ``timeout`` seconds."""
        job_id = secrets.token_hex(8)
        answered: tuple[threading.Event, list[dict]] = (threading.Event(), [])
        with self._lock:
            if self._closed:
                return None
            self._waiting[job_id] = answered
        stdin = self.popen.stdin
        assert stdin is not None  # started with pipes
        try:
            with self._writing:
                stdin.write(orjson.dumps({**job, "job_id": job_id}).decode() + "\n")
                stdin.flush()
        except (BrokenPipeError, OSError, ValueError):  # gone: the reader wakes every waiter
            pass
        if not answered[0].wait(timeout):
            with self._lock:
                self._waiting.pop(job_id, None)
            raise TimeoutError(f"{self.name} gave no answer within {timeout:g} s")
        return answered[1][0] if answered[1] else None

    def _read(self) -> None:
        stream = self.popen.stdout
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                try:
                    report = orjson.loads(line)
                except orjson.JSONDecodeError:
                    self.process.note(f"loadtest: dropped a line that is not a report: {line!r}")
                    continue
                job_id = report.get("job_id") if isinstance(report, dict) else None
                with self._lock:
                    waiter = self._waiting.pop(job_id, None) if isinstance(job_id, str) else None
                if waiter is not None:
                    waiter[1].append(report)
                    waiter[0].set()
        with self._lock:  # the worker is gone: nobody waits for it any longer
            self._closed = True
            waiting, self._waiting = self._waiting, {}
        for event, _ in waiting.values():
            event.set()

    def log_tail(self, lines: int = 20) -> str:
        return self.process.log_tail(lines)

    def stop(self, grace: float = 5.0) -> None:
        self.process.stop(grace)

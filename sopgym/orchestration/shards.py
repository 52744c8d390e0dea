"""Shard mode for agent workers, and the merge of shard results into one run folder.

In containers no runner feeds jobs to a worker's stdin. A worker in shard mode instead takes a
domain's task inputs from the gateway (``GET /v1/tasks``: inputs only, never the gold), works
the tasks of its shard (task ``i`` belongs to shard ``i % count``) and appends one whole line
per task to its own file in the shared run folder. ``sopgym merge`` then scores every line with
the runner's scoring and writes ``results.jsonl`` and ``summary.json`` exactly as ``sopgym
run`` does, so a run sharded over a cluster reads like any other run.

Files under ``<run>/shards/`` (one set per shard):

* ``shard-0003-of-0008.jsonl``: ``{"report": <worker report>, "record": <episode record>}``
  (the report: a :class:`~sopgym.runs.records.WorkerReport` without its token)
  per task, appended as tasks finish (a restarted shard skips the tasks it already has);
* ``shard-0003-of-0008.json``: the shard's settings and progress, ``finished_at`` once done;
* ``shard-0003-of-0008.claim``: who works the shard. In ``auto`` mode (compose replicas have
  no index of their own) each worker claims the first free shard under its own identity
  (:func:`worker_identity`: ``$SOPGYM_WORKER_ID``, e.g. a pod's name; else one drawn at random,
  kept in ``$SOPGYM_WORKER_ID_FILE`` so a restarted container is the same worker; never the
  hostname and pid, which every container on host networking shares); a worker
  given its index (``--shard 3/8``, a Kubernetes completion index) claims that shard as
  ``index 3``, which a restarted pod of the same index takes back and an ``auto`` worker never
  does, so no shard is worked twice whichever way workers start. A worker that stops before its
  shard is done (SIGTERM, an error) gives its claim back, so the next worker resumes the shard;
  its worker touches the claim while it works (a heartbeat), so ``merge`` can tell a shard
  whose worker is gone from one still at work.

A dependency that goes down mid-run (a tool service or the gateway restarting: the episode ends
``service_unavailable`` or unreachable) pauses the shard: it waits, bounded by ``--outage-wait``
and saying how long it has waited, then works the same task again in a fresh episode, so a
restart costs time, not tasks.

A task the infrastructure failed is appended with status ``infra_error`` like any other
(``merge`` lists it apart from the agent's figures); ``--retry-infra`` drops those lines, so
the shard's next run works exactly those tasks again.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from sopgym.core.errors import DOWN_CODE
from sopgym.core.exceptions import InfrastructureError
from sopgym.core.jsonio import JsonlAppender, dumps, read_jsonl_prefix, write_atomic
from sopgym.core.outcomes import INFRA_ERROR
from sopgym.runs.records import Job, RunSummary, WorkerReport, given
from sopgym.types import JSON

SHARD_DIR = "shards"
PROGRESS_S = 15.0  # how often a wait says what it is waiting for
POLL_S = 2.0  # how often a wait tries again
OUTAGE_WAIT_S = 300.0  # how long a shard waits for a dependency that went down mid-run
HEARTBEAT_S = 15.0  # how often a working shard touches its claim
STALE_S = 120.0  # a claim untouched this long: its worker is gone (merge says so)
CLAIM_MODE = 0o644  # a data file like the shard's results (os.open's default would be 0o777)
WORKER_ID_ENV = "SOPGYM_WORKER_ID"  # who this worker is (Kubernetes: the pod's name)
WORKER_ID_FILE_ENV = "SOPGYM_WORKER_ID_FILE"  # where a drawn identity is kept (containers)


class ShardError(InfrastructureError, RuntimeError):
    """Bad shard arguments, an unreachable stack, or shards that cannot be merged."""


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    @property
    def stem(self) -> str:
        return f"shard-{self.index:04d}-of-{self.count:04d}"

    def select(self, items: list[Any]) -> list[Any]:
        return items[self.index :: self.count]


def parse_shard(text: str) -> tuple[int | None, int]:
    """``"3/8"`` → ``(3, 8)``; ``"auto/8"`` → ``(None, 8)``: claim a free shard at start."""
    index, sep, count = text.partition("/")
    try:
        total = int(count)
        number = None if index == "auto" else int(index)
    except ValueError:
        raise ShardError(f"--shard takes INDEX/COUNT or auto/COUNT, got {text!r}") from None
    if not sep or total < 1 or (number is not None and not 0 <= number < total):
        raise ShardError(f"--shard {text!r}: need 0 <= INDEX < COUNT")
    return number, total


def shard_dir(run_dir: Path) -> Path:
    return run_dir / SHARD_DIR


def worker_identity() -> str:
    """Who claims a shard: ``$SOPGYM_WORKER_ID`` when set (a pod's name, unique in its
    namespace), else a random identity. Host and pid are not one: on host networking every
    container has the host's name, and every worker is PID 1 (or 7 under an init). With
    ``$SOPGYM_WORKER_ID_FILE`` (set in the agents image) the drawn identity is kept in that
    file, inside the container's own filesystem: a restarted container is the same worker and
    takes its shard back, a new container is a new one."""
    given = os.environ.get(WORKER_ID_ENV, "").strip()
    if given:
        return given
    kept = os.environ.get(WORKER_ID_FILE_ENV)
    if kept:
        try:
            remembered = Path(kept).read_text().strip()
        except OSError:
            remembered = ""
        if remembered:
            return remembered
    drawn = f"{socket.gethostname()}-{secrets.token_hex(6)}"
    if kept:
        with contextlib.suppress(OSError):  # read-only: this process's identity only
            write_atomic(Path(kept), drawn.encode())
    return drawn


_identity: str | None = None


def default_owner() -> str:
    """This process's :func:`worker_identity`, drawn once."""
    global _identity
    if _identity is None:
        _identity = worker_identity()
    return _identity


def claim(run_dir: Path, count: int, owner: str | None = None) -> Shard | None:
    """The shard this owner works: the one it claimed before (a restarted container), else
    the first unclaimed one (claimed atomically with O_EXCL); ``None`` when all are taken."""
    owner = owner or default_owner()
    folder = shard_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    shards = [Shard(i, count) for i in range(count)]
    for shard in shards:
        if _claimant(folder, shard) == owner:
            return shard
    for shard in shards:
        if _take(folder, shard, owner):
            return shard
    return None


def claim_index(run_dir: Path, shard: Shard) -> None:
    """Claim the shard a worker was given by index: free, or claimed by its index before (a
    restarted pod); :class:`ShardError` when an ``auto`` worker holds it."""
    folder = shard_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    owner = f"index {shard.index}"
    if _take(folder, shard, owner):
        return
    holder = _claimant(folder, shard)
    if holder != owner:
        raise ShardError(f"{shard.stem} is already claimed by {holder!r}: not working it twice")


def _claimant(folder: Path, shard: Shard) -> str | None:
    path = folder / f"{shard.stem}.claim"
    return path.read_text().strip() if path.exists() else None


def _take(folder: Path, shard: Shard, owner: str) -> bool:
    """Claim ``shard`` for ``owner`` if nobody has (atomically, with O_EXCL)."""
    try:
        fd = os.open(
            folder / f"{shard.stem}.claim", os.O_WRONLY | os.O_CREAT | os.O_EXCL, CLAIM_MODE
        )
    except FileExistsError:
        return False
    os.write(fd, owner.encode() + b"\n")
    os.close(fd)
    return True


def release(run_dir: Path, shard: Shard, owner: str) -> bool:
    """Give ``shard`` back if ``owner`` still holds it (a worker stopping before the shard is
    done): the next worker to start claims it and resumes it."""
    path = shard_dir(run_dir) / f"{shard.stem}.claim"
    if _claimant(path.parent, shard) != owner:
        return False
    path.unlink(missing_ok=True)
    return True


class Heartbeat:
    """Touches a shard's claim every HEARTBEAT_S while its worker works (a thread of its own,
    so a long task does not look like a dead worker)."""

    def __init__(self, path: Path) -> None:
        self._path, self._stop = path, threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self._path)
            except OSError:  # given back or removed by hand: nothing to keep alive
                return


class Outage:
    """A dependency down mid-run (:func:`is_outage`): the shard pauses, bounded by
    ``budget_s`` from the first failure and saying every PROGRESS_S how long it has waited,
    and works the task again; :meth:`over` when a task gets through."""

    def __init__(self, budget_s: float, log: Callable[[str], None] = print) -> None:
        self.budget_s, self._log = budget_s, log
        self.started: float | None = None
        self._said = 0.0
        self.waited_s = 0.0  # all outages of this shard together
        self.outages = 0

    def retry(self, cause: str) -> bool:
        """Wait a little and return True to work the task again; False once the outage has
        lasted ``budget_s`` (the task is then recorded as the infrastructure error it is)."""
        now = time.monotonic()
        if self.started is None:
            self.started = self._said = now
            self.outages += 1
            self._log(f"dependency down ({cause}): pausing, up to {self.budget_s:.0f}s")
        elapsed = now - self.started
        if elapsed >= self.budget_s:
            self._log(f"dependency still down after {elapsed:.0f}s: recording the task as "
                      f"an infrastructure error ({cause})")  # fmt: skip
            return False
        if now - self._said >= PROGRESS_S:
            self._log(f"waiting for the dependency ({elapsed:.0f}s of {self.budget_s:.0f}s): "
                      f"{cause}")  # fmt: skip
            self._said = now
        pause = min(POLL_S, self.budget_s - elapsed)
        time.sleep(pause)
        self.waited_s += pause
        return True

    def over(self) -> None:
        if self.started is not None:
            self._log(f"dependency back after {time.monotonic() - self.started:.1f}s: resuming")
            self.started = None


def is_outage(report: WorkerReport, record: JSON | None) -> str | None:
    """Why this episode ended because a dependency was down (a service answered
    ``service_unavailable``, the gateway was unreachable), else ``None``. Injected faults and
    other infrastructure errors are not outages: they are the run's to record."""
    error = report.error or ""
    if report.status == INFRA_ERROR and (DOWN_CODE in error or "unreachable" in error):
        return error
    for call in (record or {}).get("calls", []):
        if call.get("error_code") == DOWN_CODE:
            return f"{call.get('name')}: {DOWN_CODE}"
    # the agent finished, but the service holding the state went down before handing it over
    # at the finish (scored "final state lost", an infrastructure error): work it again
    state_error = str((record or {}).get("state_error") or "")
    if state_error.startswith(DOWN_CODE):
        return f"final state: {state_error}"
    return None


@dataclass
class ShardSettings:
    """What a shard worker runs; written to its ``.json`` so the merge knows the run."""

    gateway: str
    domains: list[str]
    agent: str = "oracle"
    model: str = "scripted"
    base_url: str | None = None
    agent_options: JSON = field(default_factory=dict)
    transport: str = "http"
    distractors: int = 0
    sop_variant: str = "clean"
    limit: int | None = None
    task_timeout: float = 300.0
    trials: int = 1  # times every task runs (as sopgym run --trials)
    seed: int = 0  # the run's seed: each job carries its trial's (jobs.trial_seed)
    outage_wait: float = OUTAGE_WAIT_S  # how long to pause for a dependency gone mid-run


def wait_until(
    deadline: float,
    attempt: Callable[[], Any],
    what: str,
    log: Callable[[str], None] = print,
) -> Any:
    """``attempt()`` until it succeeds or ``deadline`` passes (services start in any order in
    compose and Kubernetes: the gateway or the model may come up after the workers; vLLM
    may take many minutes to load its weights), saying every PROGRESS_S what it waits for."""
    started = last_said = time.monotonic()
    while True:
        try:
            return attempt()
        except Exception as error:
            now = time.monotonic()
            if now >= deadline:
                raise ShardError(f"{what}: {error}") from None
            if now - last_said >= PROGRESS_S:
                log(f"waiting for {what} ({now - started:.0f}s of {deadline - started:.0f}s): "
                    f"{error}")  # fmt: skip
                last_said = now
            time.sleep(POLL_S)


def fetch_tasks(
    client: Any, settings: ShardSettings, deadline: float, log: Callable[[str], None] = print
) -> list[JSON]:
    tasks: list[JSON] = []
    for domain in settings.domains:
        listed = wait_until(
            deadline, functools.partial(client.tasks, domain), f"tasks of {domain}", log
        )
        tasks += listed[: settings.limit] if settings.limit else listed
    return tasks


def run_shard(
    settings: ShardSettings,
    shard_text: str,
    run_dir: Path,
    data_root: Path | None = None,
    wait_s: float = 300.0,
    observe: Callable[[WorkerReport, JSON | None], None] | None = None,
    log: Callable[[str], None] = print,
    retry_infra: bool = False,
) -> int:
    """Work one shard of the run's tasks (with ``retry_infra``, its infrastructure errors
    again); returns how many tasks this call worked."""
    index, count = parse_shard(shard_text)
    owner = default_owner() if index is None else f"index {index}"
    if index is None:
        shard = claim(run_dir, count, owner)
        if shard is None:
            log(f"all {count} shards of {run_dir.name} are claimed: nothing to do")
            return 0
    else:
        shard = Shard(index, count)
        claim_index(run_dir, shard)
    folder = shard_dir(run_dir)
    finished = False
    try:
        log(f"{shard.stem}: claimed by {owner}")
        with Heartbeat(folder / f"{shard.stem}.claim"):
            worked = _work_shard(
                settings, shard, owner, run_dir, data_root, wait_s, observe, log, retry_infra
            )
        finished = True
        return worked
    finally:
        # stopped before the end (SIGTERM, an error): the task in flight was not recorded, and
        # the claim goes back so the next worker resumes the shard from its last line
        if not finished and release(run_dir, shard, owner):
            log(f"{shard.stem}: stopped before the end; claim given back for the next worker")


def _work_shard(
    settings: ShardSettings,
    shard: Shard,
    owner: str,
    run_dir: Path,
    data_root: Path | None,
    wait_s: float,
    observe: Callable[[WorkerReport, JSON | None], None] | None,
    log: Callable[[str], None],
    retry_infra: bool,
) -> int:
    from sopgym.agents import make_agent, uses_model
    from sopgym.agents.oracle import NAME, load_replays
    from sopgym.client import connect

    folder = shard_dir(run_dir)
    deadline = time.monotonic() + wait_s
    client = connect(settings.gateway, settings.transport)
    try:
        tasks = shard.select(fetch_tasks(client, settings, deadline, log))
        results = folder / f"{shard.stem}.jsonl"
        if retry_infra:
            log(f"{shard.stem}: retrying {drop_infra_errors(results)} infrastructure error(s)")
        done = {
            (report.task_id, report.trial)
            for report in map(_report, read_jsonl_prefix(results, repair=True))
        }
        todo = [
            (task, trial)
            for trial in range(settings.trials)
            for task in tasks
            if (task["id"], trial) not in done
        ]
        meta = {
            **asdict(settings),
            "run_id": run_dir.name,
            "shard": shard.index,
            "count": shard.count,
            "owner": owner,
            "tasks": len(tasks),
            "started_at": time.time(),
            "finished_at": None,
        }
        write_atomic(folder / f"{shard.stem}.json", dumps(meta))
        log(f"{shard.stem}: {len(tasks)} tasks x {settings.trials} trial(s), {len(todo)} to work")
        model_based = uses_model(settings.agent)
        options = {"model": settings.model, **settings.agent_options}
        if model_based and settings.base_url:
            options["base_url"] = settings.base_url
        if model_based and todo:
            wait_until(deadline, lambda: _model_ready(settings), "model endpoint", log)
        agent = make_agent(settings.agent, **options)
        try:
            replays = load_replays(settings.domains, data_root) if settings.agent == NAME else {}
        except ImportError as error:  # the agents image carries no generator (images.py)
            raise ShardError(
                f"the {NAME} agent replays gold, which this installation cannot build ({error}): "
                "use a model agent in the agents image, or run the oracle from a full install"
            ) from None
        outage = Outage(settings.outage_wait, log)
        appender = JsonlAppender(results)
        try:
            for task, trial in todo:
                job = Job(
                    task, run_dir.name, trial, settings.seed, settings.distractors,
                    settings.sop_variant, replays.get((task["domain"], task["id"])),
                ).to_json()  # fmt: skip
                while True:
                    report, record = _work_one(agent, client, job, settings)
                    cause = is_outage(report, record)
                    if cause is None:
                        outage.over()
                        break
                    if not outage.retry(cause):
                        break
                appender.append({"report": report.to_json(), "record": record})
                if observe is not None:
                    observe(report, record)
        finally:
            appender.close()
        write_atomic(
            folder / f"{shard.stem}.json",
            dumps({**meta, "finished_at": time.time(), "outage_wait_s": outage.waited_s,
                   "outages": outage.outages}),
        )  # fmt: skip
        return len(todo)
    finally:
        client.close()


def _work_one(
    agent: Any, client: Any, job: JSON, settings: ShardSettings
) -> tuple[WorkerReport, JSON | None]:
    """One episode of ``job``: the worker's report and the gateway's record of it."""
    from sopgym.agents.worker import run_job
    from sopgym.observability import tracing

    report = run_job(agent, client, job, settings.task_timeout, settings.model)
    tracing.flush()
    return report, fetch_record(client, report)


def fetch_record(client: Any, report: WorkerReport) -> JSON | None:
    """The gateway's record of the report's episode, read with the episode's token, which
    then leaves the report (the secret stays out of every results file). A record the gateway
    has lost makes the report an infrastructure error; one it refuses, a ``record_error``."""
    from sopgym.client import GatewayError, InfraError

    token, record = given(report.token), None
    report.token = msgspec.UNSET  # the episode's secret stays out of the shard's file
    if report.episode_id and token:
        try:
            record = client.record(report.episode_id, token)
        except InfraError as error:  # the replica holding it is gone
            report.status, report.error = INFRA_ERROR, f"record lost: {error}"
        except GatewayError as error:  # scored as incomplete, never dropped
            report.record_error = str(error)
    return record


def _report(line: JSON) -> WorkerReport:
    """The worker report of a shard file's line."""
    return WorkerReport.from_json(line["report"])


def drop_infra_errors(results: Path) -> int:
    """Remove a shard's ``infra_error`` lines (rewritten atomically); how many there were."""
    rows = read_jsonl_prefix(results, repair=True)
    kept = [r for r in rows if _report(r).status != INFRA_ERROR]
    if len(kept) < len(rows):
        write_atomic(results, b"".join(dumps(r) + b"\n" for r in kept))
    return len(rows) - len(kept)


def _model_ready(settings: ShardSettings) -> None:
    model_ready(settings.model, settings.base_url)


def model_ready(model: str, base_url: str | None) -> None:
    """Raises unless the model endpoint answers (the agents' own preflight)."""
    from sopgym.agents.models import parse_model_spec, preflight

    preflight(parse_model_spec(model, base_url))


# ---- merge ----
_SAME = (
    "domains",
    "agent",
    "model",
    "distractors",
    "sop_variant",
    "limit",
    "count",
    "trials",
    "seed",
)


def shard_metas(run_dir: Path) -> list[JSON]:
    import orjson

    return [orjson.loads(p.read_bytes()) for p in sorted(shard_dir(run_dir).glob("shard-*.json"))]


def wait_for_shards(
    run_dir: Path,
    shards: int | None,
    wait_s: float,
    log: Callable[[str], None] = print,
    stall_s: float | None = None,
) -> list[JSON]:
    """The shards' settings once ``shards`` of them (default: their own count) have finished,
    or whatever is there when ``wait_s`` runs out; says every PROGRESS_S which it waits for and
    why each is not done (:func:`shard_states`: unclaimed, at work, or stuck: its worker gone).
    With ``stall_s``, stops early once no unfinished shard has been worked for that long (no
    heartbeat on its claim and no line in its results: :func:`idle_s`), its worker gone or
    never started: waiting on would be silent time lost.
    Shards written for another count than ``shards`` are a :class:`ShardError` at once."""
    started = last_said = time.monotonic()
    started_at = time.time()  # file times are wall-clock times
    while True:
        metas = shard_metas(run_dir)
        _check_count(run_dir, metas, shards)
        expected = shards or (metas[0]["count"] if metas else None)
        finished = {m["shard"] for m in metas if m.get("finished_at")}
        now = time.monotonic()
        if (expected and len(finished) >= expected) or now >= started + wait_s:
            return metas
        states = shard_states(run_dir, expected, finished) if expected else {}
        if stall_s is not None and expected:
            idle = idle_s(run_dir, expected, finished, started_at)
            if idle >= stall_s:
                log(f"merge: no unfinished shard has been worked for {idle:.0f}s; "
                    f"{_describe(states)}")  # fmt: skip
                return metas
        if now - last_said >= PROGRESS_S:
            log(f"merge: {len(finished)} of {expected or '?'} shards finished after "
                f"{now - started:.0f}s; waiting for "
                f"{_describe(states) if states else 'the first shard'}")  # fmt: skip
            last_said = now
        time.sleep(POLL_S)


def shard_states(run_dir: Path, count: int, finished: set[int]) -> dict[int, str]:
    """Why each unfinished shard of ``count`` is not done: ``unclaimed`` (no worker took it),
    ``at work (<owner>, n lines)``, or ``stuck (<owner>, no heartbeat for Ns)``: its worker
    died without giving the claim back; delete the ``.claim`` file and a worker resumes it."""
    folder, now, states = shard_dir(run_dir), time.time(), {}
    for index in range(count):
        if index in finished:
            continue
        shard = Shard(index, count)
        path = folder / f"{shard.stem}.claim"
        try:
            owner, touched = path.read_text().strip(), path.stat().st_mtime
        except OSError:
            states[index] = "unclaimed"
            continue
        results = folder / f"{shard.stem}.jsonl"
        lines = len(read_jsonl_prefix(results)) if results.exists() else 0
        quiet = now - touched
        states[index] = (
            f"stuck ({owner}, no heartbeat for {quiet:.0f}s, {lines} lines)"
            if quiet > STALE_S
            else f"at work ({owner}, {lines} lines)"
        )
    return states


def idle_s(run_dir: Path, count: int, finished: set[int], since: float) -> float:
    """Seconds since any unfinished shard of ``count`` was last worked: its claim's heartbeat
    (every HEARTBEAT_S while a worker holds it) or its last result line, whichever is newer; a
    shard with neither counts from ``since`` (when the merge began waiting)."""
    folder, newest = shard_dir(run_dir), since
    for index in range(count):
        if index in finished:
            continue
        stem = Shard(index, count).stem
        for path in (folder / f"{stem}.claim", folder / f"{stem}.jsonl"):
            with contextlib.suppress(OSError):
                newest = max(newest, path.stat().st_mtime)
    return time.time() - newest


def _describe(states: dict[int, str]) -> str:
    return "; ".join(f"shard {i} {state}" for i, state in sorted(states.items()))


def _check_count(run_dir: Path, metas: list[JSON], shards: int | None) -> None:
    counts = sorted({m["count"] for m in metas})
    if len(counts) > 1 or (shards is not None and counts and counts != [shards]):
        expected = f"--shards {shards}" if shards is not None else "one count"
        raise ShardError(
            f"shards of {run_dir.name} were written for {' and '.join(map(str, counts))} "
            f"shard(s), not {expected}: cannot merge"
        )


def merge(
    run_dir: Path,
    shards: int | None = None,
    wait_s: float = 0.0,
    data_root: Path | None = None,
    log: Callable[[str], None] = print,
    stall_s: float | None = None,
) -> RunSummary:
    """Score every shard's results into ``results.jsonl`` and ``summary.json``.

    Tasks of the run that no shard reported count as incomplete (the summary lists them under
    ``missing``), and shards that never finished are listed under ``unfinished_shards``, with
    why under ``unfinished_shard_states``. A task worked twice (a shard run by two workers at
    once, which claims prevent; or copied by hand) is merged once, and counted under
    ``duplicate_task_rows``.
    """
    from sopgym.orchestration.runner import Runner
    from sopgym.runs.records import RunConfig

    metas = wait_for_shards(run_dir, shards, wait_s, log, stall_s)
    if not metas:
        raise ShardError(f"no shard has written to {shard_dir(run_dir)}")
    for key in _SAME:
        values = {dumps(m.get(key)) for m in metas}
        if len(values) > 1:
            raise ShardError(f"shards of {run_dir.name} disagree on {key}: cannot merge")
    count = shards or metas[0]["count"]
    config = RunConfig.from_json({**metas[0], "workers": count})
    runner = Runner(config, run_dir, data_root)
    tasks = runner.prepare()
    by_id = {t.id: t for t in tasks}
    rows: dict[tuple[str, int], JSON] = {}
    unknown = duplicates = 0
    for path in sorted(shard_dir(run_dir).glob("shard-*.jsonl")):
        for line in read_jsonl_prefix(path):
            report = _report(line)
            task = by_id.get(report.task_id or "")
            if task is None:
                unknown += 1
                continue
            slot = (task.id, report.trial)
            if slot in rows:  # the first line stands: merged once
                duplicates += 1
                continue
            rows[slot] = runner.result_row(task, report, line.get("record"), slot[1])
    ordered = [
        rows[(t.id, trial)]
        for trial in range(config.trials)
        for t in tasks
        if (t.id, trial) in rows
    ]
    write_atomic(runner.paths.results, b"".join(dumps(r) + b"\n" for r in ordered))
    summary = runner.write_summary(tasks)
    finished = {m["shard"] for m in metas if m.get("finished_at")}
    summary.unfinished_shards = [i for i in range(count) if i not in finished]
    summary.unfinished_shard_states = {
        str(i): state for i, state in shard_states(run_dir, count, finished).items()
    }
    summary.unknown_task_rows = unknown
    summary.duplicate_task_rows = duplicates
    write_atomic(runner.paths.summary, dumps(summary.to_json()))
    return summary

"""Shard mode for agent workers, and the merge of shard results into one run folder.

In containers no runner feeds jobs to a worker's stdin. A worker in shard mode instead takes a
domain's task inputs from the gateway (``GET /v1/tasks``: inputs only, never the gold), works
the tasks of its shard (task ``i`` belongs to shard ``i % count``) and appends one whole line
per task to its own file in the shared run folder. ``sopgym merge`` then scores every line with
the runner's scoring and writes ``results.jsonl`` and ``summary.json`` exactly as ``sopgym
run`` does, so a run sharded over a cluster reads like any other run.

Files under ``<run>/shards/`` (one set per shard):

* ``shard-0003-of-0008.jsonl``: ``{"report": <worker report>, "record": <episode record>}``
  per task, appended as tasks finish (a restarted shard skips the tasks it already has);
* ``shard-0003-of-0008.json``: the shard's settings and progress, ``finished_at`` once done;
* ``shard-0003-of-0008.claim``: who works the shard. In ``auto`` mode (compose replicas have
  no index of their own) each worker claims the first free shard as ``host:pid``; a worker
  given its index (``--shard 3/8``, a Kubernetes completion index) claims that shard as
  ``index 3``, which a restarted pod of the same index takes back and an ``auto`` worker never
  does, so no shard is worked twice whichever way workers start.

A task the infrastructure failed is appended with status ``infra_error`` like any other
(``merge`` lists it apart from the agent's figures); ``--retry-infra`` drops those lines, so
the shard's next run works exactly those tasks again.
"""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sopgym.core.exceptions import InfrastructureError
from sopgym.core.jsonio import JsonlAppender, dumps, read_jsonl_prefix, write_atomic
from sopgym.core.outcomes import INFRA_ERROR
from sopgym.types import JSON

SHARD_DIR = "shards"
PROGRESS_S = 15.0  # how often a wait says what it is waiting for
POLL_S = 2.0  # how often a wait tries again


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


def default_owner() -> str:
    """Who claims a shard: host and pid. In a container the worker is PID 1 and the hostname is
    the container's, so a restarted container is the same owner; on a shared host, processes
    differ by pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


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
        fd = os.open(folder / f"{shard.stem}.claim", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return False
    os.write(fd, owner.encode() + b"\n")
    os.close(fd)
    return True


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
    observe: Callable[[JSON, JSON | None], None] | None = None,
    log: Callable[[str], None] = print,
    retry_infra: bool = False,
) -> int:
    """Work one shard of the run's tasks (with ``retry_infra``, its infrastructure errors
    again); returns how many tasks this call worked."""
    from sopgym.agents import make_agent, uses_model
    from sopgym.agents.oracle import NAME, load_replays
    from sopgym.agents.worker import run_job
    from sopgym.client import GatewayError, InfraError, connect
    from sopgym.observability import tracing

    index, count = parse_shard(shard_text)
    if index is None:
        shard = claim(run_dir, count)
        if shard is None:
            log(f"all {count} shards of {run_dir.name} are claimed: nothing to do")
            return 0
    else:
        shard = Shard(index, count)
        claim_index(run_dir, shard)
    folder = shard_dir(run_dir)
    deadline = time.monotonic() + wait_s
    client = connect(settings.gateway, settings.transport)
    try:
        tasks = shard.select(fetch_tasks(client, settings, deadline, log))
        results = folder / f"{shard.stem}.jsonl"
        if retry_infra:
            log(f"{shard.stem}: retrying {drop_infra_errors(results)} infrastructure error(s)")
        done = {row["report"]["task_id"] for row in read_jsonl_prefix(results, repair=True)}
        todo = [t for t in tasks if t["id"] not in done]
        meta = {
            **asdict(settings),
            "run_id": run_dir.name,
            "shard": shard.index,
            "count": shard.count,
            "owner": default_owner(),
            "tasks": len(tasks),
            "started_at": time.time(),
            "finished_at": None,
        }
        write_atomic(folder / f"{shard.stem}.json", dumps(meta))
        log(f"{shard.stem}: {len(tasks)} tasks, {len(todo)} to work")
        model_based = uses_model(settings.agent)
        options = {"model": settings.model, **settings.agent_options}
        if model_based and settings.base_url:
            options["base_url"] = settings.base_url
        if model_based and todo:
            wait_until(deadline, lambda: _model_ready(settings), "model endpoint", log)
        agent = make_agent(settings.agent, **options)
        replays = load_replays(settings.domains, data_root) if settings.agent == NAME else {}
        appender = JsonlAppender(results)
        try:
            for task in todo:
                job = {
                    "task": task,
                    "replay": replays.get((task["domain"], task["id"])),
                    "distractors": settings.distractors,
                    "sop_variant": settings.sop_variant,
                    "run_id": run_dir.name,
                }
                report = run_job(agent, client, job, settings.task_timeout, settings.model)
                tracing.flush()
                token, record = report.pop("token", None), None
                if report.get("episode_id") and token:
                    try:
                        record = client.record(report["episode_id"], token)
                    except InfraError as error:  # the replica holding it is gone
                        report.update(status=INFRA_ERROR, error=f"record lost: {error}")
                    except GatewayError as error:  # scored as incomplete, never dropped
                        report["record_error"] = str(error)
                appender.append({"report": report, "record": record})
                if observe is not None:
                    observe(report, record)
        finally:
            appender.close()
        write_atomic(folder / f"{shard.stem}.json", dumps({**meta, "finished_at": time.time()}))
        return len(todo)
    finally:
        client.close()


def drop_infra_errors(results: Path) -> int:
    """Remove a shard's ``infra_error`` lines (rewritten atomically); how many there were."""
    rows = read_jsonl_prefix(results, repair=True)
    kept = [r for r in rows if r["report"].get("status") != INFRA_ERROR]
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
_SAME = ("domains", "agent", "model", "distractors", "sop_variant", "limit", "count")


def shard_metas(run_dir: Path) -> list[JSON]:
    import orjson

    return [orjson.loads(p.read_bytes()) for p in sorted(shard_dir(run_dir).glob("shard-*.json"))]


def wait_for_shards(
    run_dir: Path, shards: int | None, wait_s: float, log: Callable[[str], None] = print
) -> list[JSON]:
    """The shards' settings once ``shards`` of them (default: their own count) have finished,
    or whatever is there when ``wait_s`` runs out; says every PROGRESS_S which it waits for.
    Shards written for another count than ``shards`` are a :class:`ShardError` at once."""
    started = last_said = time.monotonic()
    while True:
        metas = shard_metas(run_dir)
        _check_count(run_dir, metas, shards)
        expected = shards or (metas[0]["count"] if metas else None)
        finished = {m["shard"] for m in metas if m.get("finished_at")}
        now = time.monotonic()
        if (expected and len(finished) >= expected) or now >= started + wait_s:
            return metas
        if now - last_said >= PROGRESS_S:
            left = [i for i in range(expected or 0) if i not in finished]
            log(f"merge: {len(finished)} of {expected or '?'} shards finished after "
                f"{now - started:.0f}s; waiting for {left or 'the first shard'}")  # fmt: skip
            last_said = now
        time.sleep(POLL_S)


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
) -> JSON:
    """Score every shard's results into ``results.jsonl`` and ``summary.json``.

    Tasks of the run that no shard reported count as incomplete (the summary lists them under
    ``missing``), and shards that never finished are listed under ``unfinished_shards``.
    """
    from sopgym.orchestration.runner import RunConfig, Runner

    metas = wait_for_shards(run_dir, shards, wait_s, log)
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
    rows: dict[str, JSON] = {}
    unknown = 0
    for path in sorted(shard_dir(run_dir).glob("shard-*.jsonl")):
        for line in read_jsonl_prefix(path):
            task = by_id.get(line["report"]["task_id"])
            if task is None:
                unknown += 1
                continue
            rows[task.id] = runner.result_row(task, line["report"], line.get("record"))
    ordered = [rows[t.id] for t in tasks if t.id in rows]
    write_atomic(runner.paths.results, b"".join(dumps(r) + b"\n" for r in ordered))
    summary = runner.write_summary(tasks)
    finished = {m["shard"] for m in metas if m.get("finished_at")}
    summary["unfinished_shards"] = [i for i in range(count) if i not in finished]
    summary["unknown_task_rows"] = unknown
    write_atomic(runner.paths.summary, dumps(summary))
    return summary

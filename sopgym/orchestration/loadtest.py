"""``sopgym loadtest``: drive many concurrent episodes against a stack, bounded in time.

The load comes from real agent workers (``sopgym agent-worker`` processes, each holding its
share of the episodes in flight, exactly as runs and the Kubernetes Job use them) pointed at
a running gateway and model, or at an embedded stack with the scripted model when no gateway
is given. Each finished episode's facts (its worker report, and the gateway's record of its
calls) feed the figures: episodes/s, tool calls/s, LLM calls and tokens/s, p50/p95/p99 of
tool-call and LLM latency, and error rates by class. Every worker first works one warm-up
episode (process start-up, imports and connection set-up are not load) that the figures
leave out; a worker that cannot finish its warm-up stops the loadtest with an error naming
it, rather than skewing the figures. At ``duration`` no new episode starts; episodes still
running after a grace period are cut and reported as such. Every failed episode's error text
is kept (the first few in the report), so a failure rate always comes with its reasons.

The figures come for the whole measured phase and over time (the phase cut into windows; an
episode counts in the window it ended in, with its calls). A sweep runs the same load at several
concurrencies on one stack. Each loadtest also writes its episodes' facts (``episodes.jsonl``),
so the loadtests of many pods (the Kubernetes Job) gather into one report (:func:`gather`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from sopgym.agents.metrics import EpisodeFacts, episode_facts
from sopgym.client.transports import transport
from sopgym.core.exceptions import InfrastructureError
from sopgym.evaluation.stats import percentiles
from sopgym.orchestration.dispatch import SharedWorker
from sopgym.orchestration.processes import ManagedProcess, ProcessGroup, sopgym_command
from sopgym.runs.records import Job, WorkerReport, given
from sopgym.types import JSON

FAILURES_KEPT = 20  # failed episodes whose error text the report shows
WINDOWS = 12  # the measured phase cut into this many windows for the figures over time
EPISODES_FILE = "episodes.jsonl"  # every measured episode's facts, for gathering parts


class LoadtestError(InfrastructureError, RuntimeError):
    """The load could not be driven (a worker died or hung in its warm-up)."""


@dataclass
class LoadtestConfig:
    tasks: int = 100  # episodes to run (the task list is cycled when shorter)
    concurrency: int = 4  # episodes in flight
    workers: int | None = None  # agent worker processes (None: one per core, up to concurrency)
    duration: float = 60.0  # seconds after which no episode starts
    gateway: str | None = None  # None: start the embedded stack
    transport: str = "http"
    domains: list[str] = field(default_factory=lambda: ["patient_intake"])
    agent: str = "fc"
    model: str = "scripted"
    model_url: str | None = None  # the model's /v1 base URL (embedded: the scripted server)
    task_timeout: float = 120.0
    grace: float = 30.0  # seconds in-flight episodes get after ``duration``
    warmup: bool = True
    wait_s: float = 0.0  # how long to wait for the gateway and the model to answer first


def _rates(counts: Counter[str], total: int) -> JSON:
    return {k: round(v / total, 4) for k, v in sorted(counts.items())} if total else {}


class Stats:
    """Facts of the measured episodes (thread-safe), and the figures computed from them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.facts: list[EpisodeFacts] = []
        self.ended: list[float] = []  # when each episode ended, on the same clock as started
        self.failures: list[JSON] = []  # the first FAILURES_KEPT failed episodes, with reasons
        self.started = time.monotonic()
        self.last = self.started

    def add(
        self, facts: EpisodeFacts, failure: JSON | None = None, ended: float | None = None
    ) -> None:
        """Count an episode (ended now, or at ``ended``); a failed one's ``failure`` (task,
        error text) is kept too."""
        with self._lock:
            self.facts.append(facts)
            self.ended.append(time.monotonic() if ended is None else ended)
            self.last = max(self.last, self.ended[-1])
            if facts.error and failure is not None and len(self.failures) < FAILURES_KEPT:
                self.failures.append(failure)

    def figures(self, now: float | None = None) -> JSON:
        with self._lock:
            facts = list(self.facts)
            end = now if now is not None else self.last
        return figures_of(facts, max(1e-9, end - self.started))

    def over_time(self, windows: int = WINDOWS) -> list[JSON]:
        """The figures of each of ``windows`` equal windows of the phase: throughput, latency
        percentiles and errors by class as the load went on."""
        with self._lock:
            ended = list(zip(self.ended, self.facts, strict=True))
            span = max(1e-9, self.last - self.started)
        width = span / windows
        rows = []
        for i in range(windows):
            inside = [f for t, f in ended if min(windows - 1, int((t - self.started) / width)) == i]
            figures = figures_of(inside, width)
            rows.append({
                "from_s": round(i * width, 2),
                "to_s": round((i + 1) * width, 2),
                **{k: figures[k] for k in ("episodes", "episodes_per_s", "tool_calls_per_s",
                                           "llm_calls_per_s", "tokens_per_s", "tool_latency_ms",
                                           "llm_latency_ms", "errors")},
            })  # fmt: skip
        return rows

    def episode_rows(self) -> list[JSON]:
        """Each episode's facts and when it ended (seconds from the start): ``episodes.jsonl``."""
        with self._lock:
            pairs = list(zip(self.ended, self.facts, strict=True))
        return [{"ended_s": round(t - self.started, 4), "facts": asdict(f)} for t, f in pairs]


def figures_of(facts: list[EpisodeFacts], elapsed: float) -> JSON:
    """Throughput, latency percentiles and errors by class of ``facts`` over ``elapsed`` s."""
    llm = [c for f in facts for c in f.llm]
    tools = [c for f in facts for c in f.tools]
    tokens_in = sum(c.input_tokens for c in llm)
    tokens_out = sum(c.output_tokens for c in llm)
    errors = {
        "episodes": Counter(f.error for f in facts if f.error),
        "tool_calls": Counter(c.error for c in tools if c.error),
        "llm_calls": Counter(c.error for c in llm if c.error),
    }
    return {
        "elapsed_s": round(elapsed, 3),
        "episodes": len(facts),
        "finished": sum(f.error is None for f in facts),
        "episodes_per_s": round(len(facts) / elapsed, 3),
        "tool_calls": len(tools),
        "tool_calls_per_s": round(len(tools) / elapsed, 3),
        "llm_calls": len(llm),
        "llm_calls_per_s": round(len(llm) / elapsed, 3),
        "tokens": {"input": tokens_in, "output": tokens_out, "total": tokens_in + tokens_out},
        "tokens_per_s": round((tokens_in + tokens_out) / elapsed, 1),
        "tool_latency_ms": percentiles([c.latency_s for c in tools], 1000),
        "llm_latency_ms": percentiles([c.latency_s for c in llm], 1000),
        "episode_latency_s": percentiles([f.elapsed_s for f in facts]),
        "errors": {kind: dict(sorted(c.items())) for kind, c in errors.items()},
        "error_rates": {
            "episodes": _rates(errors["episodes"], len(facts)),
            "tool_calls": _rates(errors["tool_calls"], len(tools)),
            "llm_calls": _rates(errors["llm_calls"], len(llm)),
        },
    }


class JobFeed:
    """Hands out up to ``limit`` jobs, cycling the task list, until ``stop()``."""

    def __init__(self, tasks: list[JSON], limit: int, replays: dict[tuple[str, str], JSON]) -> None:
        self._tasks: Iterator[JSON] = itertools.islice(itertools.cycle(tasks), limit)
        self._lock = threading.Lock()
        self._replays = replays  # the oracle's, by (domain, task id)
        self.stopped = False

    def next(self) -> JSON | None:
        with self._lock:
            task = None if self.stopped else next(self._tasks, None)
        if task is None:
            return None
        replay = self._replays.get((task["domain"], task["id"]))
        return Job(task, "loadtest", replay=replay).to_json()

    def stop(self) -> None:
        with self._lock:
            self.stopped = True


@dataclass
class Outcome:
    config: JSON
    figures: JSON
    warmup: JSON
    cut: int  # episodes still running when the grace period ended
    timeline: list[tuple[float, int]]  # (seconds, episodes measured so far)
    failures: list[JSON]  # the first failed episodes: task, worker, error text
    over_time: list[JSON] = field(default_factory=list)  # the figures window by window
    started_at: float = 0.0  # wall clock at the start of the measured phase
    episodes: list[JSON] = field(default_factory=list)  # Stats.episode_rows(): episodes.jsonl

    def to_json(self) -> JSON:
        return {k: v for k, v in asdict(self).items() if k != "episodes"}


Display = Callable[[JSON, int, int], None]  # figures, episodes in flight, episodes planned


class Loadtest:
    def __init__(self, config: LoadtestConfig, out_dir: Path, data_root: Path | None = None):
        self.config, self.out_dir, self.data_root = config, out_dir, data_root

    def run(self, display: Display | None = None) -> Outcome:
        return self.sweep([self.config.concurrency], display)[0]

    def sweep(self, levels: list[int], display: Display | None = None) -> list[Outcome]:
        """The load at each concurrency of ``levels`` in turn, on one stack."""
        from sopgym.orchestration.stack import embedded_stack

        config, logs = self.config, self.out_dir / "logs"
        door = transport(config.transport)
        with contextlib.ExitStack() as stack:
            if config.gateway is None:
                embedded = stack.enter_context(
                    embedded_stack(
                        config.domains,
                        logs,
                        self.data_root,
                        model=config.model if self._scripted() else None,
                        grpc=door.needs_grpc_door,
                    )
                )
                group, env = embedded.group, embedded.env
                address = door.address(embedded)
                model_url = embedded.model_url or config.model_url
            else:
                group, env = stack.enter_context(ProcessGroup()), {}
                address, model_url = config.gateway, config.model_url
            return [
                self._drive(level, group, env, address, model_url, logs, display)
                for level in levels
            ]

    def _scripted(self) -> bool:
        from sopgym.agents import uses_model
        from sopgym.agents.models import is_scripted

        return uses_model(self.config.agent) and is_scripted(self.config.model)

    def _drive(
        self,
        concurrency: int,
        group: ProcessGroup,
        env: dict[str, str],
        address: str,
        model_url: str | None,
        logs: Path,
        display: Display | None,
    ) -> Outcome:
        from sopgym.agents.oracle import NAME, load_replays
        from sopgym.client import connect

        processes = min(concurrency, self.config.workers or os.cpu_count() or 1)
        config = replace(self.config, concurrency=concurrency, workers=processes)
        client = connect(address, config.transport)
        workers: list[SharedWorker] = []
        try:
            tasks = self._wait_for_stack(client, model_url)
            replays = {}
            if config.agent == NAME:  # the oracle replays gold read locally
                replays = load_replays(config.domains, self.data_root)
            shares = [concurrency // processes + (i < concurrency % processes)
                      for i in range(processes)]  # fmt: skip
            workers = [
                SharedWorker(self._spawn(group, env, address, model_url, logs, i, share))
                for i, share in enumerate(shares)
            ]
            warm = Stats()
            if config.warmup:
                self._warm_up(workers, tasks, replays, client, warm)
            stats, feed = Stats(), JobFeed(tasks, config.tasks, replays)
            timeline: list[tuple[float, int]] = []
            started_at = time.time()
            slots = [w for w, share in zip(workers, shares, strict=True) for _ in range(share)]
            cut = self._phase(workers, slots, feed, client, stats, display, timeline)
        finally:
            client.close()
            for worker in workers:  # a sweep's next level starts its own
                worker.stop(grace=1.0)
        return Outcome(
            asdict(config), stats.figures(), warm.figures(), cut, timeline, stats.failures,
            stats.over_time(), started_at, stats.episode_rows(),
        )  # fmt: skip

    def _wait_for_stack(self, client: Any, model_url: str | None) -> list[JSON]:
        """The task list, once the gateway gives it and the model answers, waiting up to
        ``wait_s`` for both (in Kubernetes the loadtest pods start with the stack; vLLM may be
        loading its weights), saying every 15 s what it waits for."""
        from sopgym.agents import uses_model
        from sopgym.orchestration.shards import ShardError, model_ready, wait_until

        config = self.config
        deadline = time.monotonic() + config.wait_s
        try:
            tasks: list[JSON] = wait_until(
                deadline,
                lambda: [t for d in config.domains for t in client.tasks(d)],
                "the gateway's task list",
            )
            if uses_model(config.agent):
                wait_until(deadline, lambda: model_ready(config.model, model_url), "the model")
        except ShardError as error:
            raise LoadtestError(f"the stack did not answer: {error}") from None
        return tasks

    def _spawn(
        self,
        group: ProcessGroup,
        env: dict[str, str],
        address: str,
        model_url: str | None,
        logs: Path,
        index: int,
        concurrency: int = 1,
    ) -> ManagedProcess:
        config = self.config
        argv = [
            "agent-worker", "--gateway", address, "--transport", config.transport,
            "--agent", config.agent, "--model", config.model,
            "--task-timeout", str(config.task_timeout), "--concurrency", str(concurrency),
        ]  # fmt: skip
        if model_url:
            argv += ["--base-url", model_url]
        return group.start(
            f"loadtest-worker-{index}",
            sopgym_command(*argv),
            logs / f"worker-{index}.log",
            env=env,
            pipes=True,
        )

    def _warm_up(
        self,
        workers: list[SharedWorker],
        tasks: list[JSON],
        replays: dict[tuple[str, str], JSON],
        client: Any,
        stats: Stats,
    ) -> None:
        """One episode per worker, all at once, not bounded by ``duration`` (a cold start on
        a busy machine can outlast a short loadtest) but by the task timeout plus the grace.
        A worker that dies or hangs here would leave the measurement a worker short, so it
        ends the loadtest with its log instead."""
        feed = JobFeed(tasks, len(workers), replays)
        answered: set[str] = set()  # workers that answered their job (a set's add is atomic)

        def warm(worker: SharedWorker, job: JSON) -> None:
            if _work_one(worker, job, client, stats):
                answered.add(worker.name)

        threads = {
            worker: threading.Thread(target=warm, args=(worker, job), daemon=True)
            for worker in workers
            if (job := feed.next()) is not None
        }
        for thread in threads.values():
            thread.start()
        deadline = time.monotonic() + self.config.task_timeout + self.config.grace
        for thread in threads.values():
            thread.join(max(0.0, deadline - time.monotonic()))
        for worker, thread in threads.items():
            # a worker that closed its output is gone even while its exit is not yet reaped
            if thread.is_alive() or worker.name not in answered or worker.popen.poll() is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    worker.popen.wait(1.0)  # its exit code, for the message
                raise LoadtestError(
                    f"{worker.name} did not finish its warm-up episode "
                    f"(exit code {worker.popen.poll()}); its log ends:\n{worker.log_tail()}"
                )

    def _phase(
        self,
        workers: list[SharedWorker],
        slots: list[SharedWorker],
        feed: JobFeed,
        client: Any,
        stats: Stats,
        display: Display | None,
        timeline: list[tuple[float, int]],
    ) -> int:
        """Run ``feed`` on the workers' ``slots`` (a worker once per episode it holds) until it
        is empty or ``duration`` is up; returns how many episodes were cut (still running after
        the grace period)."""
        config = self.config
        in_flight = [0]
        lock = threading.Lock()
        cutting = threading.Event()

        def work(worker: SharedWorker) -> None:
            while (job := feed.next()) is not None:
                with lock:
                    in_flight[0] += 1
                alive = _work_one(worker, job, client, stats, cutting)
                with lock:
                    in_flight[0] -= 1
                if not alive:
                    return

        stats.started = stats.last = time.monotonic()
        deadline = stats.started + config.duration
        threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in slots]
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            now = time.monotonic()
            if now >= deadline:
                feed.stop()
            if now >= deadline + config.grace:
                break
            if display is not None:
                display(stats.figures(now), in_flight[0], config.tasks)
            timeline.append((round(now - stats.started, 2), len(stats.facts)))
            time.sleep(0.25)
        feed.stop()
        cutting.set()
        cut = in_flight[0]
        if cut:
            for worker in workers:  # unblocks the threads still reading a report
                worker.stop(grace=1.0)
        for thread in threads:
            thread.join(5.0)
        return cut


def _work_one(
    worker: SharedWorker,
    job: JSON,
    client: Any,
    stats: Stats,
    cutting: threading.Event | None = None,
) -> bool:
    """Have ``worker`` work ``job`` and count the episode; ``False`` when the worker is gone
    (stopped because ``cutting`` is set: the episode is cut, not counted)."""
    task = job["task"]
    answer = worker.exchange(job)
    if answer is None:
        if cutting is None or not cutting.is_set():
            stats.add(
                EpisodeFacts(task["domain"], "failed", "WorkerExited", 0.0),
                {"task_id": task["id"], "worker": worker.name,
                 "error": f"WorkerExited: code {worker.popen.poll()}; log: {worker.log_tail(5)}"},
            )  # fmt: skip
        return False
    report, record = WorkerReport.from_json(answer), None
    token = given(report.token)
    if report.episode_id and token:
        with contextlib.suppress(Exception):  # figures without the gateway's record: no tools
            record = client.record(report.episode_id, token, given(report.replica))
    failure = {"task_id": task["id"], "worker": worker.name, "error": report.error,
               "traceback": given(report.traceback)}  # fmt: skip
    stats.add(episode_facts(report, record), failure)
    return True


# ---- reports ----
def _ms(block: JSON) -> str:
    if not block["n"]:
        return "-"
    return f"{block['p50']} / {block['p95']} / {block['p99']}"


def summary_rows(figures: JSON) -> list[tuple[str, str]]:
    rates = figures["error_rates"]
    counted = {"episodes": figures["episodes"], "tool_calls": figures["tool_calls"],
               "llm_calls": figures["llm_calls"]}  # fmt: skip
    return [
        ("episodes (finished)", f"{figures['episodes']} ({figures['finished']})"),
        ("elapsed s", f"{figures['elapsed_s']:.1f}"),
        ("episodes/s", f"{figures['episodes_per_s']:.2f}"),
        ("tool calls/s", f"{figures['tool_calls_per_s']:.1f}"),
        ("LLM calls/s", f"{figures['llm_calls_per_s']:.1f}"),
        ("tokens/s", f"{figures['tokens_per_s']:.0f}"),
        ("tool-call latency p50/p95/p99 ms", _ms(figures["tool_latency_ms"])),
        ("LLM latency p50/p95/p99 ms", _ms(figures["llm_latency_ms"])),
        ("episode latency p50/p95/p99 s", _ms(figures["episode_latency_s"])),
        ("episode errors", _rate_text(rates["episodes"], counted["episodes"])),
        ("tool-call errors", _rate_text(rates["tool_calls"], counted["tool_calls"])),
        ("LLM-call errors", _rate_text(rates["llm_calls"], counted["llm_calls"])),
    ]


def _rate_text(rates: JSON, total: int) -> str:
    """The error rates by class, or ``none (0 of N)``: a zero is shown, never left blank."""
    return ", ".join(f"{k} {v:.1%}" for k, v in rates.items()) or f"none (0 of {total})"


def _error_counts(figures: JSON) -> list[tuple[str, str, int, int]]:
    """(kind, class, count, out of) for each kind of operation; a kind without errors has one
    row, class ``none`` and count 0, so a zero is shown rather than left out."""
    rows: list[tuple[str, str, int, int]] = []
    for kind, total in (("episodes", figures["episodes"]), ("tool_calls", figures["tool_calls"]),
                        ("llm_calls", figures["llm_calls"])):  # fmt: skip
        counts = figures["errors"][kind]
        rows += [(kind, k, n, total) for k, n in counts.items()] or [(kind, "none", 0, total)]
    return rows


def _error_rows(figures: JSON) -> list[list[Any]]:
    return [[kind, name, str(n), str(total), f"{n / max(1, total):.2%}"]
            for kind, name, n, total in _error_counts(figures)]  # fmt: skip


def _over_time_rows(outcome: Outcome) -> list[list[Any]]:
    return [
        [f"{w['from_s']:.1f}-{w['to_s']:.1f}", str(w["episodes"]), f"{w['episodes_per_s']:.2f}",
         f"{w['tool_calls_per_s']:.1f}", f"{w['tokens_per_s']:.0f}", _ms(w["tool_latency_ms"]),
         _ms(w["llm_latency_ms"]), str(sum(sum(c.values()) for c in w["errors"].values()))]
        for w in outcome.over_time
    ]  # fmt: skip


OVER_TIME_HEADERS = ["window s", "episodes", "episodes/s", "tool calls/s", "tokens/s",
                     "tool ms p50/p95/p99", "LLM ms p50/p95/p99", "errors"]  # fmt: skip


def _page(title: str, note: str, charts: list[str], tables: list[Any]) -> tuple[bytes, bytes]:
    """The Markdown and the self-contained HTML of a report."""
    from html import escape

    from sopgym.evaluation.report import _STYLE, html_table, markdown_table

    markdown = "\n".join(markdown_table(t) for t in tables)
    page = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>{escape(note)}</p>"
        f"<div class='plots'>{''.join(charts)}</div>{''.join(map(html_table, tables))}"
        "</body></html>"
    )
    return f"# {title}\n\n{note}\n\n{markdown}\n".encode(), page.encode()


def write_reports(outcome: Outcome, folder: Path) -> list[Path]:
    """``loadtest.json``, ``episodes.jsonl``, and Markdown and self-contained HTML with the
    evaluator's report machinery (tables, inline SVG charts)."""
    from sopgym.core.jsonio import dumps, write_atomic
    from sopgym.evaluation.report import Table
    from sopgym.evaluation.svg import bar_chart

    figures = outcome.figures
    title = (
        f"sopgym loadtest: {outcome.config['concurrency']} episodes in flight over "
        f"{outcome.config.get('workers') or outcome.config['concurrency']} worker(s), agent "
        f"{outcome.config['agent']}, model {outcome.config['model']}"
    )
    tables = [
        Table("Figures", ["figure", "value"], [list(r) for r in summary_rows(figures)]),
        Table("Errors by class", ["of", "class", "count", "out of", "rate"], _error_rows(figures)),
        Table("Over time (episodes count in the window they ended in)", OVER_TIME_HEADERS,
              _over_time_rows(outcome)),
    ]  # fmt: skip
    if outcome.failures:
        tables.append(
            Table(
                f"Failed episodes (the first {FAILURES_KEPT})",
                ["task", "worker", "error"],
                [[f["task_id"], f["worker"], f["error"] or ""] for f in outcome.failures],
            )
        )
    note = (
        f"Warm-up episodes (left out): {outcome.warmup['episodes']}; "
        f"episodes cut at the deadline: {outcome.cut}."
    )
    charts = [
        bar_chart(
            [
                (f"{kind}: {name}", n / max(1, total))
                for kind, name, n, total in _error_counts(figures)
            ],
            "Error rates by class",
            fmt=lambda v: f"{v:.1%}",
        ),
        bar_chart(
            [
                (f"{w['from_s']:.0f}-{w['to_s']:.0f} s", w["episodes_per_s"])
                for w in outcome.over_time
            ],
            "Episodes/s over time",
            fmt=lambda v: f"{v:.2f}",
        ),
        bar_chart(
            [
                (name, figures[key]["p50"] or 0.0)
                for name, key in (("tool call", "tool_latency_ms"), ("LLM call", "llm_latency_ms"))
            ],
            "Median latency (ms)",
            fmt=lambda v: f"{v:.1f} ms",
        ),
    ]
    paths = [folder / "loadtest.json", folder / "loadtest.md", folder / "loadtest.html",
             folder / EPISODES_FILE]  # fmt: skip
    markdown, page = _page(title, note, charts, tables)
    write_atomic(paths[0], dumps(outcome.to_json()))
    write_atomic(paths[1], markdown)
    write_atomic(paths[2], page)
    write_atomic(paths[3], b"".join(dumps(row) + b"\n" for row in outcome.episodes))
    return paths


def write_sweep_reports(outcomes: list[Outcome], folder: Path) -> list[Path]:
    """Each level's reports in ``c<concurrency>/``, and ``sweep.json``/``.md``/``.html``: one
    row per concurrency, so where throughput stops growing and latency starts is one look."""
    from sopgym.core.jsonio import dumps, write_atomic
    from sopgym.evaluation.report import Table
    from sopgym.evaluation.svg import bar_chart

    paths = []
    for outcome in outcomes:
        level = folder / f"c{outcome.config['concurrency']}"
        level.mkdir(parents=True, exist_ok=True)
        paths += write_reports(outcome, level)
    rows: list[list[Any]] = [
        [str(o.config["concurrency"]), str(o.figures["episodes"]),
         f"{o.figures['episodes_per_s']:.2f}",
         f"{o.figures['tool_calls_per_s']:.1f}", f"{o.figures['tokens_per_s']:.0f}",
         _ms(o.figures["tool_latency_ms"]), _ms(o.figures["episode_latency_s"]),
         _rate_text(o.figures["error_rates"]["episodes"], o.figures["episodes"])]
        for o in outcomes
    ]  # fmt: skip
    table = Table("Concurrency sweep", ["in flight", "episodes", "episodes/s", "tool calls/s",
                  "tokens/s", "tool ms p50/p95/p99", "episode s p50/p95/p99",
                  "episode errors"], rows)  # fmt: skip
    chart = bar_chart(
        [(f"{o.config['concurrency']} in flight", o.figures["episodes_per_s"]) for o in outcomes],
        "Episodes/s by concurrency",
        fmt=lambda v: f"{v:.2f}",
    )
    first = outcomes[0].config
    title = f"sopgym loadtest sweep: agent {first['agent']}, model {first['model']}"
    markdown, page = _page(title, "One stack, the levels in turn.", [chart], [table])
    summary = {"levels": [{"concurrency": o.config["concurrency"], "figures": o.figures}
                          for o in outcomes]}  # fmt: skip
    for name, data in (("sweep.json", dumps(summary)), ("sweep.md", markdown),
                       ("sweep.html", page)):  # fmt: skip
        write_atomic(folder / name, data)
        paths.append(folder / name)
    return paths


# ---- gathering the loadtests of many pods ----
def gather(
    folder: Path, parts: int, wait_s: float = 0.0, log: Callable[[str], None] = print
) -> Outcome:
    """One outcome from the loadtests written to ``folder/*/`` (one per pod of the Kubernetes
    Job): their episodes on one wall clock, so the figures are those of the whole load. Waits
    up to ``wait_s`` for ``parts`` of them, saying every 15 s how many it has."""
    import orjson

    from sopgym.agents.metrics import LlmCall, ToolCall

    deadline, said = time.monotonic() + wait_s, 0.0
    while True:
        found = sorted(p.parent for p in folder.glob(f"*/{EPISODES_FILE}"))
        if len(found) >= parts or time.monotonic() >= deadline:
            break
        if time.monotonic() - said >= 15.0:
            log(f"gather: {len(found)} of {parts} loadtest parts written; waiting")
            said = time.monotonic()
        time.sleep(2.0)
    if len(found) < parts:
        raise LoadtestError(f"{len(found)} of {parts} loadtest parts under {folder}")
    outcomes = [orjson.loads((p / "loadtest.json").read_bytes()) for p in found]
    stats = Stats()
    stats.started = stats.last = min(o["started_at"] for o in outcomes)
    for part, outcome in zip(found, outcomes, strict=True):
        for line in (part / EPISODES_FILE).read_bytes().splitlines():
            row = orjson.loads(line)
            facts = EpisodeFacts(**{
                **row["facts"],
                "llm": [LlmCall(**c) for c in row["facts"]["llm"]],
                "tools": [ToolCall(**c) for c in row["facts"]["tools"]],
            })  # fmt: skip
            stats.add(facts, ended=outcome["started_at"] + row["ended_s"])
        stats.failures += outcome["failures"][: FAILURES_KEPT - len(stats.failures)]
    workers = sum(o["config"]["concurrency"] for o in outcomes)
    config = {**outcomes[0]["config"], "concurrency": workers, "parts": len(found)}
    warmup = {"episodes": sum(o["warmup"]["episodes"] for o in outcomes)}
    cut = sum(o["cut"] for o in outcomes)
    return Outcome(
        config, stats.figures(), warmup, cut, [], stats.failures, stats.over_time(),
        stats.started, stats.episode_rows(),
    )  # fmt: skip

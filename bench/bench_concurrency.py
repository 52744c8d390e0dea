"""How many episodes one node keeps in flight against a slow model (issue 40).

Each point is a real ``sopgym run patient_intake`` (the whole stack: tool service, gateway,
collector, scripted model server, agent workers) at ``--concurrency C`` against a scripted
model that takes its time like a served one (services/model/latency.py):

* ``fixed``: ``scripted:latency=S``, every call S seconds (default 2.0);
* ``gpu``: ``openai:scripted:gpu`` on a model server of the bench's own, reached as any
  OpenAI-compatible endpoint (the path real models take): a batching server with vLLM-like
  time to first token, time per output token, prefill, prefix cache and a batch capacity; its
  ``GET /v1/stats`` gives the simulated GPU's utilisation over the run.

Per point it prints: episodes/s; the share of the latency-bound ideal (the model's summed
latency over the run's episodes divided by C: the wall time a harness that costs nothing would
need), and the share of the slots waiting on a model call over the middle 60% of the run
(the ramp-up and the last part-filled wave left out: how busy the harness keeps a model
server); the CPU per model call summed over every process of the stack (and, apart, the model
server's own); the peak RSS of each kind of process and of all of them together; p50/p99 of
an agent step (an episode's wall time over its model calls). ``--json PATH`` keeps the figures.

    python bench/bench_concurrency.py                      # 1, 10, 100, 300, 1000; fixed
    python bench/bench_concurrency.py --levels 500 --trials 6 --profile fixed
    python bench/bench_concurrency.py --levels 300 --profile gpu
    python bench/bench_concurrency.py --levels 32 --processes-up-to 32   # beside the old shape
    python bench/bench_concurrency.py --levels 300 --profile gpu --before ../base/.venv/bin/python

``--before PYTHON`` runs each point first with another checkout's interpreter (its own venv,
its sopgym: the code before a change), then with this one, and prints the two side by side;
the model server is this checkout's for both, so only the harness differs.

Run it on a quiet machine: the figures are CPU-bound, and anything else running takes its
share of the same cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

from sopgym.orchestration.processes import free_port

TASKS = 96  # patient_intake's tasks
KINDS = ("agent-worker", "gateway", "serve-tools", "model-server", "collector", "user-sim")


@dataclass
class ProcessSampler:
    """Peak RSS and last CPU time of every descendant of ``root``, by kind, sampled from
    /proc twice a second (a process that has gone keeps its last sample)."""

    root: int
    rss_peak: dict[int, int] = field(default_factory=dict)
    cpu: dict[int, float] = field(default_factory=dict)
    kind: dict[int, str] = field(default_factory=dict)
    total_rss_peak: int = 0
    timeline: list[tuple[float, dict[int, float]]] = field(default_factory=list)  # (unix s, cpu)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._loop, daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self._stop.is_set():
            total = 0
            for pid in [self.root, *descendants(self.root)]:
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    status = Path(f"/proc/{pid}/status").read_text()
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                rss = next((int(line.split()[1]) * 1024 for line in status.splitlines()
                            if line.startswith("VmRSS:")), 0)  # fmt: skip
                total += rss
                self.rss_peak[pid] = max(self.rss_peak.get(pid, 0), rss)
                self.cpu[pid] = (int(stat[11]) + int(stat[12])) / tick
                words = {w.decode(errors="replace") for w in argv}
                # an exiting process has no argv, and a child seen between its fork and its
                # exec still has its parent's: a "runner" is looked at again until it is not
                if any(words) and self.kind.get(pid, "runner") == "runner":
                    self.kind[pid] = next((k for k in KINDS if k in words), "runner")
            self.total_rss_peak = max(self.total_rss_peak, total)
            self.timeline.append((time.time(), dict(self.cpu)))
            self._stop.wait(0.5)

    def steady(self, calls: list[tuple[float, float]]) -> dict[str, float] | None:
        """CPU ms per model call by kind over the middle 60% of the run (from the sample at
        or after its start to the last one before its end, over the calls that ended between
        them): start-up, the ramp-up and the last wave left out, as the issue's ~13 ms was
        measured (the extra CPU of a longer run over its extra calls)."""
        if not calls or len(self.timeline) < 3:
            return None
        first, last = min(a for a, _ in calls), max(b for _, b in calls)
        low, high = first + 0.2 * (last - first), first + 0.8 * (last - first)
        start = next((x for x in self.timeline if x[0] >= low), None)
        end = next((x for x in reversed(self.timeline) if x[0] <= high), None)
        if start is None or end is None or end[0] <= start[0]:
            return None
        ended = sum(start[0] <= b < end[0] for _, b in calls)
        if not ended:
            return None
        by_kind: dict[str, float] = {}
        for pid, cpu in end[1].items():
            kind = self.kind.get(pid, "runner")
            by_kind[kind] = by_kind.get(kind, 0.0) + cpu - start[1].get(pid, 0.0)
        return {k: round(1000 * v / ended, 3) for k, v in sorted(by_kind.items())}

    def by_kind(self) -> dict[str, dict[str, float]]:
        kinds: dict[str, dict[str, float]] = {}
        for pid, kind in self.kind.items():
            if pid not in self.cpu:
                continue
            entry = kinds.setdefault(kind, {"processes": 0, "rss_mb": 0.0, "cpu_s": 0.0})
            entry["processes"] += 1
            entry["rss_mb"] = max(entry["rss_mb"], self.rss_peak[pid] / 2**20)
            entry["cpu_s"] += self.cpu[pid]
        return kinds


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children of any of its threads: the runner starts its
    workers from its dispatching threads)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = []
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children += (task / "children").read_text().split()
            except OSError:
                continue
        found += [int(c) for c in children]
        todo += [int(c) for c in children]
    return found


def start_model_server(profile: str, logs: Path) -> tuple[subprocess.Popen, str]:
    """A scripted model server of the bench's own (the gpu profile is read from its stats)."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "sopgym", "model-server", "--port", str(port), "--domain",
         "patient_intake", "--profile", profile],
        stdout=open(logs / "model-server.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit(f"the model server did not start: see {logs / 'model-server.log'}")


def run_point(
    args: argparse.Namespace,
    concurrency: int,
    runs: Path,
    shape: str = "threads",
    python: str = sys.executable,
    label: str = "",
) -> dict:
    """One run at ``concurrency``: ``threads`` (episodes spread over the default processes)
    or ``processes`` (one process per episode in flight: how runs worked before); ``python``
    runs the stack (another checkout's interpreter for a before/after)."""
    run_id = f"{args.profile}-c{concurrency}-{shape}{'-' + label if label else ''}"
    model_args = ["--model", f"scripted:latency={args.latency:g}"]
    server, base_url = None, None
    if args.profile == "gpu":
        server, base_url = start_model_server("gpu", runs)
        model_args = ["--model", "openai:scripted:gpu", "--base-url", f"{base_url}/v1"]
    episodes = args.episodes or 0  # a level below one trial's 96 tasks runs the first N
    select = ["--limit", str(episodes)] if 0 < episodes < TASKS else []
    argv = [python, "-m", "sopgym", "run", "patient_intake", *model_args, *select,
            "--concurrency", str(concurrency), "--trials", str(args.trials), "--runs-dir",
            str(runs), "--run-id", run_id, "--quiet", "--task-timeout", "600"]  # fmt: skip
    if shape == "processes":
        argv += ["--workers", str(concurrency)]
    elif args.workers:
        argv += ["--workers", str(args.workers)]
    if args.no_trace:
        argv.append("--no-trace")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # run from the runs folder: `python -m sopgym` from a checkout would import that checkout's
    # sopgym package whatever the interpreter's venv holds (a --before run would mix two trees)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=runs)
    sampler = ProcessSampler(process.pid)
    sampler.start()
    out, err = process.communicate()
    wall = time.perf_counter() - started
    sampler.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        raise SystemExit(f"run {run_id} failed ({process.returncode}): {err.decode()[-2000:]}")
    gpu = None
    if server is not None:
        gpu = httpx.get(f"{base_url}/v1/stats", params={"window": wall}, timeout=5).json()
        server.terminate()
        server.wait(10)
    phases = phases_of(out.decode(errors="replace"))
    point = figures(args, concurrency, runs / run_id, wall, phases, before, after, sampler, gpu)
    point["shape"] = shape
    if label:
        point["label"] = label
    return point


def phases_of(printed: str) -> dict[str, float]:
    """The run's own ``time:`` line (start-up, tasks, scoring, shut-down, summary), parsed."""
    line = next((x for x in printed.splitlines() if x.startswith("time: ")), "")
    phases = {}
    for part in line.removeprefix("time: ").split(", "):
        name, _, value = part.rpartition(" ")[0].rpartition(" ")
        if name:
            phases[name] = float(value)
    return phases


def figures(
    args: argparse.Namespace,
    concurrency: int,
    run_dir: Path,
    wall: float,
    phases: dict[str, float],
    before: resource.struct_rusage,
    after: resource.struct_rusage,
    sampler: ProcessSampler,
    gpu: dict | None,
) -> dict:
    rows = [orjson.loads(line) for line in (run_dir / "results.jsonl").read_bytes().splitlines()]
    calls = [c for r in rows for c in r["llm_calls"]]
    model_seconds = sum(c.get("latency_s", 0.0) for c in calls)
    steps = [r["elapsed_s"] / len(r["llm_calls"]) for r in rows if r["llm_calls"]]
    tasks_wall = max(r["elapsed_s"] for r in rows)  # not the run's wall: see tasks_s below
    kinds = sampler.by_kind()
    total_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    model_cpu = kinds.get("model-server", {}).get("cpu_s", 0.0)
    ideal = model_seconds / concurrency
    tasks_s = phases.get("tasks", wall)
    point = {
        "profile": args.profile,
        "concurrency": concurrency,
        "episodes": len(rows),
        "errors": sum(r["status"] != "finished" for r in rows),
        "model_calls": len(calls),
        "wall_s": round(wall, 2),
        "tasks_s": round(tasks_s, 2),
        "episodes_per_s": round(len(rows) / tasks_s, 2),
        "ideal_s": round(ideal, 2),
        "share_of_ideal": round(ideal / tasks_s, 3) if tasks_s else None,
        "cpu_ms_per_call": round(1000 * total_cpu / max(1, len(calls)), 2),
        "harness_cpu_ms_per_call": round(1000 * (total_cpu - model_cpu) / max(1, len(calls)), 2),
        "rss_total_mb": round(sampler.total_rss_peak / 2**20),
        "processes": {k: {"n": int(v["processes"]), "rss_mb": round(v["rss_mb"]),
                          "cpu_ms_per_call": round(1000 * v["cpu_s"] / max(1, len(calls)), 2)}
                      for k, v in sorted(kinds.items())},
        "step_p50_s": round(statistics.median(steps), 3) if steps else None,
        "step_p99_s": round(percentile(steps, 0.99), 3) if steps else None,
        "longest_episode_s": round(tasks_wall, 2),
    }
    intervals = chat_calls(run_dir)
    busy = model_busy_share(intervals, concurrency)
    if busy is not None:
        point["model_busy_middle"] = busy
    steady = sampler.steady(intervals)
    if steady is not None:
        point["steady_cpu_ms_per_call"] = steady
        point["steady_harness_cpu_ms_per_call"] = round(
            sum(v for k, v in steady.items() if k != "model-server"), 3
        )
    if gpu is not None:
        point["gpu"] = gpu
    return point


def chat_calls(run_dir: Path) -> list[tuple[float, float]]:
    """Every model call of the run as (start, end) in unix seconds, from the agent workers'
    ``chat`` spans (none for an untraced run)."""
    intervals = []
    for path in (run_dir / "traces").glob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            for spans in orjson.loads(line).get("resourceSpans", []):
                for scope in spans["scopeSpans"]:
                    intervals += [
                        (int(s["startTimeUnixNano"]) / 1e9, int(s["endTimeUnixNano"]) / 1e9)
                        for s in scope["spans"]
                        if s["name"].startswith("chat ")
                    ]
    return intervals


def model_busy_share(intervals: list[tuple[float, float]], concurrency: int) -> float | None:
    """The time-averaged share of the slots waiting on a model call over the middle 60% of the
    run (its ramp-up and its last, part-filled wave left out): how busy the harness keeps a
    model server. None for an untraced run."""
    if not intervals:
        return None
    first, last = min(a for a, _ in intervals), max(b for _, b in intervals)
    low, high = first + 0.2 * (last - first), first + 0.8 * (last - first)
    covered = sum(max(0.0, min(b, high) - max(a, low)) for a, b in intervals)
    return round(covered / ((high - low) * concurrency), 3)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def show(point: dict) -> None:
    print(
        f"{point.get('label', ''):>6} {point['profile']:>5} {point['shape']:>9} "
        f"C={point['concurrency']:<5} "
        f"{point['episodes']:>5} episodes "
        f"({point['errors']} errors) in {point['tasks_s']:.1f} s: {point['episodes_per_s']:.1f}/s, "
        f"{100 * (point['share_of_ideal'] or 0):.0f}% of ideal ({point['ideal_s']:.1f} s); "
        f"CPU {point['cpu_ms_per_call']:.2f} ms/call ({point['harness_cpu_ms_per_call']:.2f} "
        f"without the model server); RSS {point['rss_total_mb']} MB; step p50 "
        f"{point['step_p50_s']} s p99 {point['step_p99_s']} s; slots waiting on the model "
        f"(middle 60%): {100 * point.get('model_busy_middle', 0):.0f}%"
    )
    steady = point.get("steady_cpu_ms_per_call", {})
    if steady:
        print(f"        steady state (middle 60%, start-up left out): "
              f"{point['steady_harness_cpu_ms_per_call']:.2f} ms CPU/call without the model "
              "server")  # fmt: skip
    for kind, figures in point["processes"].items():
        middle = f", steady {steady[kind]:.2f}" if kind in steady else ""
        print(f"        {kind:<13} x{figures['n']:<3} peak RSS {figures['rss_mb']:>5} MB, "
              f"{figures['cpu_ms_per_call']:.2f} ms CPU/call{middle}")  # fmt: skip
    if "gpu" in point:
        print(f"        simulated GPU: {orjson.dumps(point['gpu']).decode()[:400]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="1,10,100,300,1000",
                        help="concurrencies to run, comma-separated")  # fmt: skip
    parser.add_argument("--profile", choices=("fixed", "gpu"), default="fixed")
    parser.add_argument("--latency", type=float, default=2.0, help="fixed: seconds per call")
    parser.add_argument("--trials", type=int, default=0,
                        help="trials per task (default: 2 episodes per slot)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=0, help="worker processes (default: auto)")
    parser.add_argument("--no-trace", action="store_true", help="runs without the trace store")
    parser.add_argument("--processes-up-to", type=int, default=0,
                        help="also run levels up to this one as one process per episode (the "
                        "shape runs had before), side by side")  # fmt: skip
    parser.add_argument("--episodes-per-slot", type=int, default=2,
                        help="episodes per slot when --trials is not given")  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--before", default=None, metavar="PYTHON",
                        help="also run each point with this interpreter first (another "
                        "checkout's venv): before and after side by side")  # fmt: skip
    args = parser.parse_args()
    if args.before and not shutil.which(args.before):
        parser.error(f"--before {args.before}: no such interpreter")
    runs = Path(tempfile.mkdtemp(prefix="bench-concurrency-"))
    points = []
    try:
        for level in (int(x) for x in args.levels.split(",")):
            episodes = args.episodes_per_slot * level
            trials = args.trials or max(1, -(-episodes // TASKS))
            shapes = ["threads"] + (["processes"] if level <= args.processes_up_to else [])
            settings = argparse.Namespace(**{**vars(args), "trials": trials, "episodes": episodes})
            for shape in shapes:
                sides = [(args.before, "before"), (sys.executable, "after")] if args.before else [
                    (sys.executable, "")]  # fmt: skip
                for python, label in sides:
                    point = run_point(settings, level, runs, shape, python, label)
                    show(point)
                    points.append(point)
    finally:
        shutil.rmtree(runs, ignore_errors=True)
    if args.json:
        args.json.write_bytes(orjson.dumps(points, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()

"""The harness alone: an agent worker's own CPU per model call, start-up left out (issue 40).

One ``sopgym agent-worker`` process is fed patient_intake's jobs on stdin (the way the runner
feeds it) against a real stack (tool service, gateway, scripted model server) and its CPU time
is read from the kernel when it exits. Two runs, a short one and a long one, give the
*marginal* CPU per model call: (long - short) / (calls of long - calls of short), so the
worker's start-up (~1.4 s of imports) is left out, as in steady state. The stack's other
processes are not counted: this is what the worker spends around each model call (LangGraph,
LangChain, the model and gateway clients, the OpenTelemetry spans, the report).

    python bench/bench_worker_cpu.py                       # traces on and off
    python bench/bench_worker_cpu.py --before ../base/.venv/bin/python   # another checkout beside
    python bench/bench_worker_cpu.py --model scripted:latency=0.3 --concurrency 10
    python bench/bench_worker_cpu.py --concurrency 1,10,50   # episodes in flight: each level

``--before PYTHON`` runs the same with another checkout's interpreter (its own venv) first;
the stack is this checkout's for both. Figures vary with the machine's load (the CPU a call
takes grows when the caches are shared with other work): compare sides run together.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from sopgym.core import dataset
from sopgym.core.registry import load_domain
from sopgym.orchestration.stack import embedded_stack
from sopgym.runs.records import Job

DOMAIN = "patient_intake"


def worker_cpu(
    python: str, stack_env: dict[str, str], argv: list[str], jobs: list[str]
) -> tuple[float, int]:
    """CPU seconds of one worker that ran ``jobs``, and the model calls its reports name."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [python, "-m", "sopgym", "agent-worker", *argv],
        input="".join(jobs),
        capture_output=True,
        text=True,
        env={**os.environ, **stack_env},
        timeout=1800,
        cwd=tempfile.gettempdir(),  # not a checkout: `-m sopgym` imports the venv's sopgym
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the worker failed ({done.returncode}): {done.stderr[-2000:]}")
    reports = [orjson.loads(line) for line in done.stdout.splitlines()]
    unfinished = [r for r in reports if r.get("status") != "finished"]
    if unfinished:
        raise SystemExit(f"{len(unfinished)} jobs did not finish: {unfinished[0].get('error')}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, sum(len(r["llm_calls"]) for r in reports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="react")
    parser.add_argument("--model", default="scripted", help="a scripted model spec")
    parser.add_argument("--concurrency", default="1,10",
                        help="episodes in flight, comma-separated levels")  # fmt: skip
    parser.add_argument("--trials", type=int, default=3, help="trials of the long run")
    parser.add_argument("--short", type=int, default=20, help="jobs of the short run")
    parser.add_argument("--before", default=None, metavar="PYTHON",
                        help="another checkout's interpreter, run first")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds, the sides taking turns; their median too")  # fmt: skip
    args = parser.parse_args()
    data = dataset.load(load_domain(DOMAIN))
    jobs = [
        orjson.dumps(Job(t.to_json(), "bench", trial, 0, 0, "clean", None, None,
                         f"j{i}-{trial}").to_json()).decode() + "\n"
        for trial in range(args.trials)
        for i, t in enumerate(data.tasks)
    ]  # fmt: skip
    levels = [int(level) for level in args.concurrency.split(",")]
    sides = [(args.before, "before"), (sys.executable, "after")] if args.before else [
        (sys.executable, "")]  # fmt: skip
    print(f"{DOMAIN}, {args.agent}, {args.model}; marginal CPU per model call of the agent "
          f"worker ({len(jobs) - args.short} jobs), at {args.concurrency} in flight")  # fmt: skip
    medians: list[str] = []
    for trace in (True, False):
        with tempfile.TemporaryDirectory(prefix="bench-worker-cpu-") as folder:
            where = Path(folder)
            with embedded_stack([DOMAIN], where / "logs", None,
                                traces=where / "traces" if trace else None,
                                model=args.model, injection_log=where / "injections.jsonl",
                                ) as stack:  # fmt: skip
                options = orjson.dumps({"model": args.model, "base_url": stack.model_url})
                for level in levels:
                    argv = ["--gateway", stack.gateway_url, "--agent", args.agent, "--model",
                            args.model, "--options", options.decode(), "--concurrency",
                            str(level)]  # fmt: skip
                    case = f"{level:>4} in flight, traces {'on ' if trace else 'off'}"
                    figures: dict[str, list[float]] = {label: [] for _, label in sides}
                    for _ in range(args.repeat):
                        for python, label in sides:
                            short_cpu, short_calls = worker_cpu(python, stack.env, argv,
                                                                jobs[: args.short])  # fmt: skip
                            long_cpu, long_calls = worker_cpu(python, stack.env, argv, jobs)
                            extra = max(1, long_calls - short_calls)
                            per_call = 1000 * (long_cpu - short_cpu) / extra
                            figures[label].append(per_call)
                            print(f"  {label:>6} {case}: {per_call:.2f} ms a call over "
                                  f"{long_calls - short_calls} calls (the short run, start-up "
                                  f"included: {1000 * short_cpu / max(1, short_calls):.1f} ms "
                                  "a call)", flush=True)  # fmt: skip
                    for label, values in figures.items():
                        middle = statistics.median(values)
                        medians.append(f"  {label:>6} {case}: median {middle:.2f} ms of "
                                       f"{len(values)}")  # fmt: skip
    if args.repeat > 1:
        print("\n".join(medians))


if __name__ == "__main__":
    main()

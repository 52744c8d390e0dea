"""Scale-out figures: `sopgym loadtest` against 1, 2, 3 gateway replicas behind HAProxy (and
tool-service replicas), throughput and the CPU each part spends per episode and per tool call,
so the scaling on a machine with more cores can be predicted; and a replica killed mid-load.

    python bench/bench_scaleout.py --replicas 1,2,3 --concurrency 8 --duration 20
    python bench/bench_scaleout.py --replicas 2 --kill-after 8 --duration 20

The CPU of each stack process (gateways, tool services, scripted model, HAProxy) is read from
/proc over the measured phase (warm-ups left out); the agent workers' CPU comes from rusage once
they exit (their warm-up episode included). The machine's load average is recorded before and
after each run: on a shared machine the throughput is only comparable within one invocation.
The figures in docs/deploy.md came from this script.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
from pathlib import Path

import orjson

from sopgym.core.jsonio import dumps
from sopgym.orchestration.loadtest import Loadtest, LoadtestConfig
from sopgym.orchestration.processes import ManagedProcess
from sopgym.orchestration.replicas import ReplicatedStack, replicated_stack

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(process: ManagedProcess) -> float:
    """User + system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{process.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def roles(stack: ReplicatedStack) -> dict[str, list[ManagedProcess]]:
    """Every process of the stack, by role."""
    tools = [p for replicas in stack.tools.values() for p in replicas]
    found = {"gateway": stack.gateways, "tools": tools}
    return found | {
        name: [p] for name, p in (("model", stack.model), ("haproxy", stack.proxy)) if p is not None
    }


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def measure(args: argparse.Namespace, replicas: int, folder: Path) -> dict:
    with replicated_stack(
        args.domain, folder / "logs", gateways=replicas, tool_replicas=args.tool_replicas,
        model=True,
    ) as stack:  # fmt: skip
        parts = roles(stack)
        config = LoadtestConfig(
            tasks=100_000, concurrency=args.concurrency, duration=args.duration,
            gateway=stack.url, domains=args.domain, agent="fc", model="scripted",
            model_url=stack.model_url, grace=10.0,
        )  # fmt: skip
        started: dict[str, float] = {}

        def at_phase_start(*_: object) -> None:
            if not started:  # the first live update: warm-ups are done, the phase is on
                started.update({n: sum(map(cpu_s, ps)) for n, ps in parts.items()})
                started["_wall"] = time.monotonic()
                if args.kill_after is not None:
                    threading.Timer(args.kill_after, stack.gateways[-1].popen.kill).start()

        load_before = load_average()
        workers_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        outcome = Loadtest(config, folder / "loadtest").run(at_phase_start)
        alive = {n: [p for p in ps if p.popen.poll() is None] for n, ps in parts.items()}
        ended = {n: sum(map(cpu_s, ps)) for n, ps in alive.items()}
        workers_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = outcome.figures
    episodes, calls = max(1, figures["episodes"]), max(1, figures["tool_calls"])
    cpu = {n: round(ended[n] - started[n], 3) for n in parts if alive[n]}
    worker_cpu = (workers_after.ru_utime + workers_after.ru_stime) - (
        workers_before.ru_utime + workers_before.ru_stime
    )
    return {
        "gateway_replicas": replicas,
        "tool_replicas": args.tool_replicas,
        "concurrency": args.concurrency,
        "episodes": figures["episodes"],
        "finished": figures["finished"],
        "episodes_per_s": figures["episodes_per_s"],
        "tool_calls_per_s": figures["tool_calls_per_s"],
        "tool_latency_ms": figures["tool_latency_ms"],
        "episode_errors": figures["errors"]["episodes"],
        "elapsed_s": figures["elapsed_s"],
        "cpu_s": cpu,
        "gateway_cpu_ms_per_episode": round(cpu.get("gateway", 0.0) / episodes * 1000, 2),
        "gateway_cpu_ms_per_tool_call": round(cpu.get("gateway", 0.0) / calls * 1000, 3),
        "stack_cpu_ms_per_episode": round(sum(cpu.values()) / episodes * 1000, 2),
        "workers_cpu_s_with_warmup": round(worker_cpu, 3),
        "workers_cpu_ms_per_episode": round(
            worker_cpu / (figures["episodes"] + args.concurrency) * 1000, 1
        ),  # the warm-ups (one per worker) counted too
        "load_average": [load_before, load_average()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", default="1,2,3", help="gateway replica counts, in turn")
    parser.add_argument("--tool-replicas", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--domain", action="append", default=None)
    parser.add_argument(
        "--kill-after",
        type=float,
        default=None,
        help="kill the last gateway replica this many seconds into the load",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    args.domain = args.domain or ["patient_intake"]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for replicas in (int(n) for n in args.replicas.split(",")):
            row = measure(args, replicas, Path(scratch) / f"n{replicas}")
            rows.append(row)
            print(orjson.dumps(row).decode(), flush=True)
    if args.out:
        args.out.write_bytes(dumps({"nproc": os.cpu_count(), "runs": rows}))
    print(
        "\n| gateways | episodes/s | tool calls/s | tool p50/p95 ms | gateway CPU ms/episode "
        "| stack CPU ms/episode | workers CPU ms/episode | lost (errors) | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        latency = r["tool_latency_ms"]
        print(f"| {r['gateway_replicas']} | {r['episodes_per_s']:.2f} | "
              f"{r['tool_calls_per_s']:.1f} | {latency['p50']} / {latency['p95']} | "
              f"{r['gateway_cpu_ms_per_episode']} | {r['stack_cpu_ms_per_episode']} | "
              f"{r['workers_cpu_ms_per_episode']} | "
              f"{sum(r['episode_errors'].values())} of {r['episodes']} | "
              f"{r['load_average'][0]:.1f} → {r['load_average'][1]:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()

"""Tool-call latency through the gateway with tracing off vs on, and what tracing costs in CPU.

Two real stacks run side by side on 127.0.0.1 (patient-intake tool service + gateway): one
untraced, one traced exactly as ``sopgym run`` traces (the run's OTLP collector started
first, every process exporting through the SDK's BatchSpanProcessor). Traced calls carry a
``traceparent`` header, as an agent's do. The benchmark alternates blocks of sequential
keep-alive calls between the two stacks, pausing after each block so the traced stack's
exporter has drained before the untraced stack is timed: a shared, noisy machine then slows
both alike. It reports median / p99 latency per stack, and CPU time per call of each process
(from /proc, far less sensitive to other load than latency). Target (issue 4): tracing adds
<= 15% at the median.

``--client stdlib`` times the calls with Python's http.client instead of a raw socket (the
client's own ~0.2 ms per call then dilutes the ratio; session 1's figures were taken so).

    python bench/bench_tracing.py [--calls 250] [--blocks 12] [--client raw|stdlib]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench_gateway import TOOL, RawKeepAlive, StdlibKeepAlive

from sopgym.client import GatewayClient
from sopgym.evaluation.sources import load_spans
from sopgym.orchestration.stack import Stack, embedded_stack

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


@dataclass
class Target:
    stack: Stack
    client: RawKeepAlive | StdlibKeepAlive
    timings: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    calls: int = 0

    def block(self, calls: int) -> None:
        pids = {c.name: c.popen.pid for c in self.stack.group.children}
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        self.timings += [self.client.call() for _ in range(calls)]
        time.sleep(0.8)  # the traced stack's exporter and collector finish this block's spans
        for name, pid in pids.items():
            self.cpu[name] = self.cpu.get(name, 0.0) + cpu_seconds(pid) - before[name]
        self.calls += calls


@contextlib.contextmanager
def target(
    traced: bool, root: Path, client: type[RawKeepAlive | StdlibKeepAlive]
) -> Iterator[Target]:
    traces = root / "traces" if traced else None
    with embedded_stack(["patient_intake"], root / "logs", traces=traces) as stack:
        opener = GatewayClient(stack.gateway_url)
        episode = opener.open(opener.tasks("patient_intake")[0]["id"], "patient_intake")
        headers = {"Authorization": f"Bearer {episode.token}"}
        if traced:
            headers["traceparent"] = PARENT
        path = f"/v1/episodes/{episode.id}/tools/{TOOL}"
        yield Target(stack, client(stack.gateway_url, path, headers))
        opener.close()


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(len(ordered) * 0.99) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=250, help="timed calls per block")
    parser.add_argument("--blocks", type=int, default=12, help="blocks per stack")
    parser.add_argument("--client", choices=("raw", "stdlib"), default="raw")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        client = RawKeepAlive if options.client == "raw" else StdlibKeepAlive
        with target(False, root / "off", client) as off, target(True, root / "on", client) as on:
            for _ in range(options.blocks):
                off.block(options.calls)
                on.block(options.calls)
        spans = load_spans(root / "on" / "traces").total
    print(f"{len(off.timings)} sequential calls per stack via the gateway ({TOOL}), "
          f"{options.blocks} alternating blocks:")  # fmt: skip
    for name, t in (("off", off), ("on ", on)):
        cpu = ", ".join(
            f"{proc} {seconds / t.calls * 1e6:.0f}" for proc, seconds in sorted(t.cpu.items())
        )
        print(f"tracing {name}  median {statistics.median(t.timings):.3f} ms   "
              f"p99 {p99(t.timings):.3f} ms   CPU us/call: {cpu}")  # fmt: skip
    a, b = statistics.median(off.timings), statistics.median(on.timings)
    print(f"tracing adds {b - a:.3f} ms = {(b - a) / a:+.1%} at the median (target <= 15%); "
          f"{spans} spans stored")  # fmt: skip


if __name__ == "__main__":
    main()

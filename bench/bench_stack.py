"""Footprint of the embedded stack: start-up time and the memory of every process in it.

Starts the stack ``sopgym run`` starts (trace receiver, tool services, scripted model server,
user simulator, gateway) for the given domains, with their data generated beforehand (as
``sopgym run`` does), and prints the wall time from the first spawn to the gateway's
``/readyz``, then each process's CPU time so far (the start-up's cost, which a busy machine
does not inflate as it does the wall time) and resident memory: RSS, and PSS (shared pages
split among the processes sharing them, so the PSS column adds up).

    python bench/bench_stack.py [DOMAIN ...] [--service-groups N] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from sopgym.core import dataset
from sopgym.core.registry import domain_names, load_domain
from sopgym.orchestration.stack import embedded_stack

MB = 1024 * 1024


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used (Linux: /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory(pid: int) -> tuple[int, int]:
    """RSS and PSS of a process, in bytes (Linux: /proc/<pid>/smaps_rollup)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, value = line.partition(":")
        fields[name] = int(value.split()[0]) * 1024
    return fields["Rss"], fields["Pss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("domains", nargs="*", help="default: every shipped domain")
    parser.add_argument("--service-groups", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    names = options.domains or domain_names()
    for name in names:
        dataset.materialize(load_domain(name))
    startups = []
    for attempt in range(options.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            with embedded_stack(
                names,
                Path(tmp) / "logs",
                traces=Path(tmp) / "traces",
                model="scripted",
                service_groups=options.service_groups or 1,
            ) as stack:
                startups.append(time.perf_counter() - started)
                if attempt == options.repeat - 1:
                    rows = [
                        (c.name, cpu_seconds(c.popen.pid), *memory(c.popen.pid))
                        for c in stack.group.children
                    ]
    print(
        f"{len(names)} domains; stack start-up (s): median {statistics.median(startups):.2f}"
        f" over {options.repeat} (min {min(startups):.2f}, max {max(startups):.2f})"
    )
    print(f"{'process':<40} {'CPU s':>6} {'RSS MB':>8} {'PSS MB':>8}")
    for name, cpu, rss, pss in rows:
        print(f"{name:<40} {cpu:6.2f} {rss / MB:8.1f} {pss / MB:8.1f}")
    for label, chosen in [
        ("tool services", [r for r in rows if r[0].startswith("tools")]),
        ("whole stack", rows),
    ]:
        print(
            f"{label + f' ({len(chosen)} processes)':<40} {sum(r[1] for r in chosen):6.2f} "
            f"{sum(r[2] for r in chosen) / MB:8.1f} {sum(r[3] for r in chosen) / MB:8.1f}"
        )


if __name__ == "__main__":
    main()

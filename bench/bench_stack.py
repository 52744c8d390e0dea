"""Footprint of the embedded stack: start-up time and the memory of every process in it.

Starts the stack ``sopgym run`` starts (trace receiver, tool services, scripted model server,
user simulator, gateway) for the given domains, with their data generated beforehand (as
``sopgym run`` does), and prints the wall time from the first spawn to the gateway's
``/readyz``, then each process's resident memory: RSS, and PSS (shared pages split among
the processes sharing them, so the PSS column adds up).

    python bench/bench_stack.py [DOMAIN ...] [--service-groups N] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sopgym.core import dataset
from sopgym.core.registry import domain_names, load_domain
from sopgym.orchestration.stack import embedded_stack

MB = 1024 * 1024


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
                    rows = [(c.name, *memory(c.popen.pid)) for c in stack.group.children]
    print(
        f"{len(names)} domains; stack start-up (s): median {statistics.median(startups):.2f}"
        f" over {options.repeat} (min {min(startups):.2f}, max {max(startups):.2f})"
    )
    print(f"{'process':<40} {'RSS MB':>8} {'PSS MB':>8}")
    for name, rss, pss in rows:
        print(f"{name:<40} {rss / MB:8.1f} {pss / MB:8.1f}")
    tools = [(rss, pss) for name, rss, pss in rows if name.startswith("tools")]
    print(
        f"{'tool services (' + str(len(tools)) + ' processes)':<40} "
        f"{sum(r for r, _ in tools) / MB:8.1f} {sum(p for _, p in tools) / MB:8.1f}"
    )
    print(
        f"{'whole stack':<40} {sum(r[1] for r in rows) / MB:8.1f} "
        f"{sum(r[2] for r in rows) / MB:8.1f}"
    )


if __name__ == "__main__":
    main()

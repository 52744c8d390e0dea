"""Start-up time of each domain's tool service: process spawn to ``/readyz`` answering 200.

The dataset is generated beforehand (as ``sopgym run`` does), so this measures what a
restart costs: interpreter, imports, loading and indexing the data, binding the port.

    python bench/bench_startup.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sopgym.core import dataset
from sopgym.core.registry import domain_names, load_domain
from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(f"{'domain':<30} median start-up (s) over {options.repeat} starts")
        for name in domain_names():
            dataset.materialize(load_domain(name), root)
            timings = []
            for _ in range(options.repeat):
                port = free_port()
                with ProcessGroup() as group:
                    started = time.perf_counter()
                    group.start(
                        name,
                        sopgym_command(
                            "serve-tools", name, "--port", str(port), "--data-root", str(root)
                        ),
                        root / "logs" / f"{name}.log",
                        ready_url=f"http://127.0.0.1:{port}/readyz",
                    ).wait_ready()
                    timings.append(time.perf_counter() - started)
            print(f"{name:<30} {statistics.median(timings):.2f}")


if __name__ == "__main__":
    main()

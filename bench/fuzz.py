"""Fuzz every shipped domain's tool service and the gateway at depth with schemathesis.

Starts the embedded stack over the shipped domains, then sends at least ``--cases`` generated
cases (valid and invalid, alternating rounds) to each tool service and to the gateway, in
parallel processes, holding every answer to the service's own OpenAPI document. Prints the
counts per target and exits 1 on any server error or failed check.

    python bench/fuzz.py [--cases 10000] [--jobs 4] [--domain customer_service ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sopgym.core import dataset
from sopgym.core.access import SECRET_HEADER
from sopgym.core.registry import domain_names, load_domain
from sopgym.orchestration.fuzz import FuzzCounts, episode_preparer, fuzz
from sopgym.orchestration.stack import embedded_stack


def _fuzz_service(url: str, cases: int, secret: str) -> tuple[FuzzCounts, float]:
    started = time.monotonic()
    counts = fuzz(f"{url}/openapi.json", cases, headers={SECRET_HEADER.decode(): secret})
    return counts, time.monotonic() - started


def _fuzz_gateway(url: str, cases: int, domain: str, task_id: str) -> tuple[FuzzCounts, float]:
    started = time.monotonic()
    counts = fuzz(f"{url}/openapi.json", cases, episode_preparer(url, domain, task_id))
    return counts, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="at least this many per target")
    parser.add_argument("--jobs", type=int, default=4, help="targets fuzzed at once")
    parser.add_argument("--domain", action="append", help="default: every shipped domain")
    options = parser.parse_args()
    names = options.domain or domain_names(extra="")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in names:
            dataset.materialize(load_domain(name), root)
        with (
            embedded_stack(names, root / "logs", root) as stack,
            ProcessPoolExecutor(options.jobs) as pool,
        ):
            first = next(iter(stack.services))
            task = dataset.load(load_domain(first), root).tasks[0].id
            runs = {
                f"tools {d}": pool.submit(_fuzz_service, url, options.cases, stack.service_secret)
                for d, url in stack.services.items()
            }
            runs["gateway"] = pool.submit(
                _fuzz_gateway, stack.gateway_url, options.cases, first, task
            )
            print(f"{'target':<45} {'cases':>7} {'5xx':>5} {'failed':>6} {'s':>6}  statuses")
            bad = 0
            for target, running in runs.items():
                counts, seconds = running.result()
                figures = counts.to_json()
                bad += counts.server_errors + len(counts.failures)
                row = f"{target:<45} {counts.cases:>7} {counts.server_errors:>5} "
                print(f"{row}{len(counts.failures):>6} {seconds:>6.0f}  {figures['statuses']}")
                for failure in counts.failures[:3]:
                    print(f"    {failure}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

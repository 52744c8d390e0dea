"""Throughput of the RL environment API: steps/s and episodes/s with many environments at once.

Starts the patient-intake tool service and the gateway as real processes on 127.0.0.1 (and,
for the HTTP figures, ``sopgym env-serve`` in front of them) and plays oracle rollouts (every
gold call, then the gold answer: the reward is 1.0 each time, checked) with E environments at
once, each on a thread of its own:
  * in process: SopgymEnv objects over one gateway client;
  * over HTTP: E trainer threads against the env server's reset/step/state API;
  * harness cost per step: the median time of an env.step() tool call minus that of the same
    call made straight through the client (Episode.call), sequentially, on one environment.

    python bench/bench_env.py [--envs 64] [--duration 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from sopgym.core import dataset
from sopgym.core.registry import load_domain
from sopgym.env import SopgymEnv, make_env
from sopgym.orchestration.processes import ManagedProcess, free_port, sopgym_command
from sopgym.orchestration.stack import embedded_stack

DOMAIN = "patient_intake"


def oracle_actions(data: dataset.DomainData, task_id: str) -> list[dict[str, Any]]:
    gold = data.gold[task_id]
    calls = [{"type": "tool", "name": c.name, "arguments": c.arguments} for c in gold.calls]
    return [*calls, {"type": "finish", "outputs": gold.outputs}]


def drive(rollout: Callable[[int], int], threads: int, seconds: float) -> tuple[float, float]:
    """Run ``rollout(i)`` (it returns its step count) on each thread until time is up:
    steps/s and episodes/s over all threads."""
    steps, episodes = [0] * threads, [0] * threads
    stop = time.monotonic() + seconds

    def work(i: int) -> None:
        while time.monotonic() < stop:
            steps[i] += rollout(i)
            episodes[i] += 1

    started = time.monotonic()
    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.monotonic() - started
    return sum(steps) / elapsed, sum(episodes) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = dataset.load(load_domain(DOMAIN), root / "data")
        task_ids = [t.id for t in data.tasks]
        with embedded_stack([DOMAIN], root / "logs", root / "data") as stack:
            envs: list[SopgymEnv] = [
                make_env(stack.gateway_url, DOMAIN, root / "data") for _ in range(args.envs)
            ]

            def in_process(i: int) -> int:
                env = envs[i]
                env.reset(options={"task_id": task_ids[i % len(task_ids)]})
                actions = oracle_actions(data, env.task.id if env.task else "")
                for action in actions:
                    _, reward, *_ = env.step(action)
                assert reward == 1.0
                return len(actions)

            steps, episodes = drive(in_process, args.envs, args.duration)
            print(f"in process, {args.envs} envs: {steps:,.0f} steps/s, {episodes:,.1f} episodes/s")

            env = make_env(stack.gateway_url, DOMAIN, root / "data", max_steps=2 * args.calls)
            env.reset(options={"task_id": task_ids[0]})
            call = data.gold[task_ids[0]].calls[0]
            action = {"type": "tool", "name": call.name, "arguments": call.arguments}
            episode = env.episode
            assert episode is not None
            direct = _median_ms(lambda: episode.call(call.name, call.arguments), args.calls)
            stepped = _median_ms(lambda: env.step(action), args.calls)
            print(f"per step: env.step {stepped:.3f} ms, Episode.call {direct:.3f} ms, "
                  f"harness {stepped - direct:.3f} ms")  # fmt: skip
            for environment in [*envs, env]:
                environment.close()
                environment.client.close()

            port = free_port()
            url = f"http://127.0.0.1:{port}"
            argv = sopgym_command(
                "env-serve", "--gateway", stack.gateway_url, "--domain", DOMAIN,
                "--port", str(port), "--data-root", str(root / "data"),
            )  # fmt: skip
            ready = f"{url}/healthz"
            server = ManagedProcess("env-server", argv, root / "env.log", ready_url=ready)
            try:
                server.wait_ready(60)
                clients = [httpx.Client(base_url=url, timeout=60) for _ in range(args.envs)]

                def over_http(i: int) -> int:
                    client = clients[i]
                    task_id = task_ids[i % len(task_ids)]
                    opened = client.post("/reset", json={"task_id": task_id}).json()
                    actions = oracle_actions(data, task_id)
                    for action in actions:
                        step = client.post(
                            "/step", json={"env_id": opened["env_id"], "action": action}
                        ).json()
                    assert step["reward"] == 1.0
                    client.delete(f"/envs/{opened['env_id']}")
                    return len(actions)

                steps, episodes = drive(over_http, args.envs, args.duration)
                print(f"over HTTP, {args.envs} envs: {steps:,.0f} steps/s, "
                      f"{episodes:,.1f} episodes/s")  # fmt: skip
                for client in clients:
                    client.close()
            finally:
                server.stop()


def _median_ms(call: Callable[[], object], calls: int) -> float:
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


if __name__ == "__main__":
    main()

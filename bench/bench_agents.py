"""Agent throughput and the harness's own overhead per agent step, on the scripted model.

For each agent and worker count it runs patient intake through the full stack (tool service,
gateway, scripted model server, agent worker processes) and reports:
  * tasks/s over the whole run (stack and worker start-up included) and in steady state
    (from the first finished task to the last);
  * per agent step (one model turn plus the tool calls it asked for): wall time, as the mean
    over all steps and as the median over tasks of each task's own step time (its wall time
    over its model turns: episode set-up and the final answer are shared out over its steps);
    split into the model round trip (LangChain client -> HTTP -> scripted server and back;
    mean, and median over calls), the tool round trips as the gateway timed them, and the rest
    (graph, prompts, parsing, the agent's HTTP to the gateway);
  * the scripted model's own compute per request, measured in-process, and "harness ms": the
    median step less that compute (a task's first turn costs the first-turn figure, its later
    turns the later-turn one), i.e. the step's cost excluding the model's own thinking.

    python bench/bench_agents.py [--agents fc,react,plan] [--workers 1,2,4] [--limit N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from sopgym.agents.prompts import case_message, system_prompt
from sopgym.core import dataset
from sopgym.core.registry import load_domain
from sopgym.orchestration.runner import Runner
from sopgym.runs.records import RunConfig
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile

DOMAIN = "patient_intake"


def run_once(agent: str, workers: int, limit: int | None, data_root: Path | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as folder:
        config = RunConfig.from_json(
            {
                "domains": [DOMAIN],
                "agent": agent,
                "model": "scripted",
                "workers": workers,
                "limit": limit,
                "trace": False,
            }
        )
        runner = Runner(config, Path(folder) / "run", data_root)
        tasks = runner.prepare()
        finished: list[float] = []
        started = time.perf_counter()
        summary = runner.execute(tasks, lambda _row: finished.append(time.perf_counter()))
        wall = time.perf_counter() - started
        rows = [orjson.loads(x) for x in (Path(folder) / "run" / "results.jsonl").open("rb")]
    steps = sum(len(r["llm_calls"]) for r in rows)
    elapsed = sum(r["elapsed_s"] for r in rows)
    latencies = [c["latency_s"] for r in rows for c in r["llm_calls"]]
    model_s = sum(latencies)
    tools_s = sum(c["duration_ms"] for r in rows for c in r["trajectory"]["calls"]) / 1000
    steady = (len(finished) - 1) / (finished[-1] - finished[0]) if len(finished) > 1 else 0.0
    return {
        "agent": agent,
        "workers": workers,
        "tasks": len(rows),
        "tsr": summary.tsr,
        "tasks_per_s": len(rows) / wall,
        "steady_tasks_per_s": steady,
        "steps_per_task": steps / len(rows),
        "step_ms": 1000 * elapsed / steps,
        "median_step_ms": 1000
        * statistics.median(r["elapsed_s"] / len(r["llm_calls"]) for r in rows if r["llm_calls"]),
        "model_ms": 1000 * model_s / steps,
        "median_model_ms": 1000 * statistics.median(latencies),
        "tools_ms": 1000 * tools_s / steps,
        "rest_ms": 1000 * (elapsed - model_s - tools_s) / steps,
    }


def scripted_compute_us(data_root: Path | None, repeats: int = 300) -> tuple[float, float]:
    """Median microseconds the scripted model needs per request: on a task's first turn (it
    finds the case by reading the conversation) and on later turns (the case is memoised)."""
    data = dataset.load(load_domain(DOMAIN), data_root)
    model = ScriptedModel([data], parse_profile("perfect"))
    tools = [t.spec.to_openai() for t in data.domain.tools]
    opening = case_message(data.domain.sop(), data.tasks[0].inputs)
    body: dict[str, Any] = {
        "model": "scripted",
        "tools": tools,
        "messages": [
            {"role": "system", "content": system_prompt(data.domain.output_schema)},
            {"role": "user", "content": opening},
        ],
    }

    def median_us(first_turn: bool) -> float:
        timings = []
        for i in range(repeats):
            if first_turn:  # a conversation never seen before
                body["messages"][1]["content"] = opening + " " * (i + 1)
            begun = time.perf_counter()
            model.respond(body)
            timings.append((time.perf_counter() - begun) * 1e6)
        return statistics.median(timings)

    return median_us(True), median_us(False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="fc,react,plan")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--limit", type=int, default=None, help="first N tasks (default: all)")
    parser.add_argument("--data-root", type=Path, default=None)
    args = parser.parse_args()
    first, later = scripted_compute_us(args.data_root)
    print(
        f"scripted model compute per request (in-process median): first turn of a task "
        f"{first:.0f} us, later turns {later:.0f} us"
    )
    header = (
        f"{'agent':6} {'workers':>7} {'tasks':>5} {'TSR':>5} {'tasks/s':>8} "
        f"{'steady/s':>8} {'steps/task':>10} {'step ms':>8} {'med step':>8} "
        f"{'model ms':>8} {'med model':>9} {'tools ms':>8} {'rest ms':>8} {'harness ms':>10}"
    )
    print(header)
    for agent in args.agents.split(","):
        for workers in (int(w) for w in args.workers.split(",")):
            r = run_once(agent, workers, args.limit, args.data_root)
            steps = r["steps_per_task"]
            compute_ms = (first + (steps - 1) * later) / steps / 1000  # per step, on average
            print(
                f"{r['agent']:6} {r['workers']:>7} {r['tasks']:>5} {r['tsr']:>5.0%} "
                f"{r['tasks_per_s']:>8.2f} {r['steady_tasks_per_s']:>8.2f} "
                f"{steps:>10.2f} {r['step_ms']:>8.2f} {r['median_step_ms']:>8.2f} "
                f"{r['model_ms']:>8.2f} {r['median_model_ms']:>9.2f} {r['tools_ms']:>8.2f} "
                f"{r['rest_ms']:>8.2f} {r['median_step_ms'] - compute_ms:>10.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()

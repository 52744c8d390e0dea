"""The agents' own cost per step, apart from the model and the tools: LangGraph's loop, the
nodes, prompts, parsing and the worker's per-task work, held against LangGraph's floor.

  * floor: a bare two-node StateGraph (model -> tools -> model ..., nodes that only append
    to a message list) on this machine: what any LangGraph agent pays per step;
  * each agent (react, fc, plan) solving patient intake in this process with its model
    replies and tool results replayed from one recorded live run (full stack, scripted
    model): the model call (``invoke_model``, its chat span included) and the tool
    transport (``Episode._call``) are replaced, so no network, model or gateway time is in
    the figure; the nodes, tool spans and the worker's job handling (``run_job``: task span,
    report) are.

Figures are CPU milliseconds per step (one model turn and the tool calls it asked for),
the median of several rounds, so a busy machine moves them less than wall time.

    python bench/bench_graph.py [--agents react,fc,plan] [--limit 40] [--rounds 9]
"""

from __future__ import annotations

import argparse
import operator
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr
from pathlib import Path
from typing import Annotated, Any, TypedDict
from unittest import mock

from langgraph.graph import END, START, StateGraph

from sopgym.agents import llm as model_calls
from sopgym.agents import make_agent
from sopgym.agents.base import Agent
from sopgym.agents.worker import run_job
from sopgym.client import Episode, GatewayClient, ToolResult
from sopgym.core import dataset
from sopgym.core.registry import load_domain
from sopgym.orchestration.stack import embedded_stack
from sopgym.types import JSON

DOMAIN = "patient_intake"
FLOOR_STEPS = 6


class FloorState(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]
    turns: int


def floor_graph() -> Any:
    def model(state: FloorState) -> FloorState:
        return {"messages": ["reply"], "turns": state.get("turns", 0) + 1}

    def tools(state: FloorState) -> FloorState:
        return {"messages": ["result"]}

    graph = StateGraph(FloorState)
    graph.add_node("model", model)
    graph.add_node("tools", tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges(
        "model", lambda s: END if s["turns"] >= FLOOR_STEPS else "tools", ["tools", END]
    )
    graph.add_edge("tools", "model")
    return graph.compile()


def cpu_ms_per_step(run: Callable[[], int], rounds: int) -> float:
    """Median over ``rounds`` of CPU ms per step; ``run`` does one round, returns its steps."""
    run()  # warm-up
    figures = []
    for _ in range(rounds):
        started = time.process_time()
        steps = run()
        figures.append((time.process_time() - started) * 1000 / steps)
    return statistics.median(figures)


def floor_ms(rounds: int) -> float:
    graph = floor_graph()

    def one_round() -> int:
        for _ in range(100):
            graph.invoke({"messages": [], "turns": 0})
        return 100 * FLOOR_STEPS

    return cpu_ms_per_step(one_round, rounds)


class Recording:
    """What one live run of an agent saw, per task: the opening, model replies, tool results."""

    def __init__(self) -> None:
        self.openings: dict[str, JSON] = {}
        self.replies: dict[str, list[Any]] = {}
        self.results: dict[str, list[ToolResult]] = {}


def jobs(limit: int) -> list[JSON]:
    tasks = dataset.load(load_domain(DOMAIN), None).tasks[:limit]
    return [{"task": t.to_json(), "sop_variant": "clean", "trial": 0} for t in tasks]


def record(agent_name: str, todo: list[JSON]) -> Recording:
    """Run the agent against the real stack and keep everything it received."""
    seen = Recording()
    current = [""]
    invoke, call, open_ = model_calls.invoke_model, Episode._call, GatewayClient.open

    def recorded_invoke(*args: Any, **kwargs: Any) -> Any:
        reply = invoke(*args, **kwargs)
        seen.replies[current[0]].append(reply)
        return reply

    def recorded_call(episode: Episode, name: str, arguments: Any) -> tuple[int, JSON]:
        status, body = call(episode, name, arguments)
        seen.results[current[0]].append(ToolResult(status, body))
        return status, body

    def recorded_open(client: GatewayClient, *args: Any, **kwargs: Any) -> Episode:
        episode = open_(client, *args, **kwargs)
        seen.openings[current[0]] = {
            "episode_id": episode.id,
            "token": episode.token,
            "tools": episode.tools,
            "sop": episode.sop,
            "input_schema": episode.input_schema,
            "output_schema": episode.output_schema,
        }
        return episode

    with (
        tempfile.TemporaryFile("w") as log,
        redirect_stderr(log),  # the agent's per-step log lines
        tempfile.TemporaryDirectory(prefix="bench-graph-") as logs,
        embedded_stack([DOMAIN], Path(logs), model="scripted") as stack,
        mock.patch.object(model_calls, "invoke_model", recorded_invoke),
        mock.patch.object(Episode, "_call", recorded_call),
        mock.patch.object(GatewayClient, "open", recorded_open),
    ):
        agent = make_agent(agent_name, base_url=stack.model_url)
        client = GatewayClient(stack.gateway_url)
        for job in todo:
            current[0] = job["task"]["id"]
            seen.replies[current[0]], seen.results[current[0]] = [], []
            report = run_job(agent, client, job, 60.0, "scripted")
            if report.status != "finished":
                raise RuntimeError(f"live run of {current[0]}: {report.error}")
        client.close()
    return seen


class ReplayGateway:
    """Stands in for the gateway client: opens the recorded episodes, accepts every finish."""

    base_url = "http://replay"

    def __init__(self, recording: Recording) -> None:
        self.recording = recording

    def open(self, task_id: str, domain: str, **_: Any) -> Episode:
        return Episode(self, self.recording.openings[task_id])  # type: ignore[arg-type]

    def request(self, *_: Any, **__: Any) -> Any:
        return mock.Mock(status=200, text="")


class Replay:
    """Model replies and tool results from a recording, one task at a time (:meth:`start`);
    a usage record is kept per model turn, as the real model call keeps one."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._replies: Iterator[Any] = iter(())
        self._results: Iterator[ToolResult] = iter(())

    def start(self, task_id: str) -> None:
        self._replies = iter(self.recording.replies[task_id])
        self._results = iter(self.recording.results[task_id])

    def invoke(self, llm: Any, messages: Any, context: Any, **_: Any) -> Any:
        context.usage.append({"model": "scripted", "purpose": "", "latency_s": 0.0})
        return next(self._replies)

    def result(self) -> tuple[int, JSON]:
        result = next(self._results)
        return result.status, result.body

    @contextmanager
    def installed(self) -> Iterator[None]:
        with (
            mock.patch.object(model_calls, "invoke_model", self.invoke),
            mock.patch.object(Episode, "_call", lambda _episode, _name, _args: self.result()),
        ):
            yield


def agent_ms(agent_name: str, todo: list[JSON], rounds: int) -> tuple[float, float]:
    """CPU ms per step of the agent's own work, and its steps per task."""
    recording = record(agent_name, todo)
    agent: Agent = make_agent(agent_name, base_url="http://127.0.0.1:9/v1")  # never called
    gateway = ReplayGateway(recording)
    replay = Replay(recording)

    def one_round() -> int:
        steps = 0
        for job in todo:
            replay.start(job["task"]["id"])
            report = run_job(agent, gateway, job, 60.0, "scripted")  # type: ignore[arg-type]
            if report.status != "finished":
                raise RuntimeError(f"replay of {job['task']['id']} diverged: {report.error}")
            steps += len(report.llm_calls)
        return steps

    # the per-step log lines go to a file, as a worker's stderr goes to its log
    with replay.installed(), tempfile.TemporaryFile("w") as log, redirect_stderr(log):
        own = cpu_ms_per_step(one_round, rounds)
    return own, sum(map(len, recording.replies.values())) / len(todo)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="react,fc,plan")
    parser.add_argument("--limit", type=int, default=40, help="first N tasks")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    floor = floor_ms(args.rounds)
    print(f"LangGraph floor (bare two-node StateGraph loop): {floor:.3f} ms CPU per step")
    print(f"{'agent':6} {'steps/task':>10} {'own ms/step':>11} {'over floor':>10}")
    todo = jobs(args.limit)
    for name in args.agents.split(","):
        own, steps = agent_ms(name, todo, args.rounds)
        print(f"{name:6} {steps:>10.2f} {own:>11.3f} {own - floor:>10.3f}", flush=True)


if __name__ == "__main__":
    main()

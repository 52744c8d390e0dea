"""An agent worker process: takes jobs on stdin, answers one JSON line per job on stdout.

A job is ``{"task": {...}, "data_dir": "...", "distractors": N, "sop_variant": "clean"}``.
The worker opens the episode at the gateway, lets its agent solve the task, finishes the
episode and reports ``{"task_id", "episode_id", "status", "error", "elapsed_s", ...}``.
It never imports a tool implementation: tools exist for it only behind the gateway.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any, TextIO

import orjson

from sopgym.agents import make_agent
from sopgym.agents.base import Agent, AgentContext
from sopgym.agents.client import GatewayClient
from sopgym.core.tasks import Task

JSON = dict[str, Any]


def run_job(agent: Agent, client: GatewayClient, job: JSON, task_timeout: float) -> JSON:
    task = Task.from_json(job["task"])
    started = time.monotonic()
    report: JSON = {
        "task_id": task.id,
        "domain": task.domain,
        "episode_id": None,
        "status": "failed",
        "error": None,
    }
    context = AgentContext(
        data_dir=Path(job["data_dir"]) if job.get("data_dir") else None,
        deadline=started + task_timeout,
    )
    try:
        episode = client.open(
            task.id,
            task.domain,
            distractors=job.get("distractors"),
            sop_variant=job.get("sop_variant", "clean"),
            meta={"agent": agent.name, "run_id": job.get("run_id")},
        )
        report["episode_id"], report["token"] = episode.id, episode.token
        outputs = agent.solve(task, episode, context)
        episode.finish(outputs)
        report["status"] = "finished"
    except Exception as error:  # one task's failure must not end the worker
        report["error"] = f"{type(error).__name__}: {error}"
        report["traceback"] = traceback.format_exc(limit=5)
    report["elapsed_s"] = round(time.monotonic() - started, 4)
    report["llm_calls"] = context.usage
    return report


def serve(
    agent_name: str,
    gateway_url: str,
    task_timeout: float,
    agent_options: JSON,
    jobs: TextIO = sys.stdin,
    out: TextIO = sys.stdout,
) -> None:
    agent = make_agent(agent_name, **agent_options)
    client = GatewayClient(gateway_url)
    try:
        for line in jobs:
            if not line.strip():
                continue
            report = run_job(agent, client, orjson.loads(line), task_timeout)
            out.write(orjson.dumps(report).decode() + "\n")
            out.flush()
    finally:
        client.close()

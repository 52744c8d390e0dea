"""A real-model smoke benchmark: a few tasks per agent against an OpenAI-compatible server
(llama.cpp's ``llama-server``, vLLM, any ``.../v1``), with the harness's share of the time.

For each agent it runs ``sopgym run <domain> --limit N --model openai:<name> --base-url URL``
(one worker, so the model serves one request at a time) and reads the run's results.jsonl:

* TSR, mean tool F1, error classes (the evaluator's call taxonomy, and the failed episodes'
  error types, e.g. ``StepLimitExceeded``, ``RepeatedAction``);
* s per step (episode wall time over model calls), model calls and tokens per task, generated
  tokens/s over the model calls' wall time;
* the harness's share of episode wall time: everything that is not waiting on the model
  (tool calls through the gateway, graph, prompts, parsing);
* the server's own generation speed measured alone first (one request with a prompt of about
  the agents' size, no harness), so harness overhead reads as a ratio.

It is not a CI test: it needs a model server. ``--python`` runs another checkout's sopgym
(e.g. ``/work/main/.venv/bin/python`` for "before" figures); ``--run-option`` passes flags
only this checkout knows (``--max-steps 12``). See docs/local-models.md.

    python bench/bench_real_model.py --base-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-coder-1.5b --agents fc,react,plan --limit 5 --task-timeout 60
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import orjson

from sopgym.agents.metrics import exception_class
from sopgym.types import JSON

# about the size of an agent's first prompt on patient_intake (2.3-2.7k tokens)
_FILLER = "The intake clerk checks the patient's record, insurance and consent forms. " * 160


def server_alone(base_url: str, model: str, max_tokens: int = 64) -> JSON:
    """One request with an agent-sized prompt, straight to the server: its own speed."""
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": _FILLER},
            {"role": "user", "content": "Summarise the procedure in three sentences."},
        ],
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    started = time.perf_counter()
    reply = httpx.post(f"{base_url.rstrip('/')}/chat/completions", json=body, timeout=600)
    reply.raise_for_status()
    seconds = time.perf_counter() - started
    data = reply.json()
    usage = data.get("usage") or {}
    timings = data.get("timings") or {}  # llama-server reports its own prompt/generation speed
    return {
        "wall_s": round(seconds, 2),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "output_tokens_per_s": round((usage.get("completion_tokens") or 0) / seconds, 2),
        "server_prompt_tokens_per_s": timings.get("prompt_per_second"),
        "server_generated_tokens_per_s": timings.get("predicted_per_second"),
    }


def run_agent(args: argparse.Namespace, agent: str, folder: Path) -> JSON:
    command = [
        args.python,
        "-m",
        "sopgym",
        "run",
        args.domain,
        "--agent",
        agent,
        "--model",
        f"openai:{args.model}",
        "--base-url",
        args.base_url,
        "--limit",
        str(args.limit),
        "--workers",
        "1",
        "--task-timeout",
        str(args.task_timeout),
        "--runs-dir",
        str(folder),
        "--run-id",
        agent,
        "--no-trace",
        *[part for option in args.run_option for part in option.split()],
    ]
    environment = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "local")}
    started = time.perf_counter()
    # run from outside any checkout, so ``-m sopgym`` imports the chosen python's install
    done = subprocess.run(
        command, capture_output=True, text=True, env=environment, cwd=folder, check=False
    )
    wall = time.perf_counter() - started
    results = folder / agent / "results.jsonl"
    if not results.exists():
        raise SystemExit(f"{agent}: no results ({done.returncode}): {done.stderr[-2000:]}")
    rows = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    return figures(rows, wall)


def figures(rows: list[JSON], wall_s: float) -> JSON:
    calls = [c for r in rows for c in r.get("llm_calls") or ()]
    model_s = sum(float(c.get("latency_s") or 0) for c in calls)
    episode_s = sum(float(r.get("elapsed_s") or 0) for r in rows)
    output_tokens = sum(int(c.get("output_tokens") or 0) for c in calls)
    errors: Counter[str] = Counter()
    for row in rows:
        errors.update(row["score"].get("errors") or {})
        if row.get("status") != "finished":
            errors[f"{row.get('status')}:{exception_class(row.get('error')) or 'error'}"] += 1
    scored = [r for r in rows if r.get("status") != "infra_error"]
    f1 = [r["score"]["tool_f1"] for r in scored if r["score"].get("tool_f1") is not None]
    return {
        "tasks": len(rows),
        "tsr": round(sum(r["score"]["success"] for r in scored) / len(scored), 3)
        if scored
        else None,
        "tool_f1": round(statistics.mean(f1), 3) if f1 else None,
        "answered_without_tools": sum(bool(r["score"].get("answered_without_tools")) for r in rows),
        "tool_calls": sum(int(r["score"].get("calls") or 0) for r in rows),
        "model_calls": len(calls),
        "s_per_step": round(episode_s / len(calls), 2) if calls else None,
        "output_tokens_per_s": round(output_tokens / model_s, 2) if model_s else None,
        "harness_share": round(1 - model_s / episode_s, 3) if episode_s else None,
        "episode_s": round(episode_s, 1),
        "run_wall_s": round(wall_s, 1),
        "errors": dict(sorted(errors.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="the server's OpenAI base URL (.../v1)")
    parser.add_argument("--model", default="local", help="the model name the server expects")
    parser.add_argument("--agents", default="fc,react,plan")
    parser.add_argument("--domain", default="patient_intake")
    parser.add_argument("--limit", type=int, default=5, help="tasks per agent")
    parser.add_argument("--task-timeout", type=float, default=120.0)
    parser.add_argument("--python", default=sys.executable, help="the sopgym to run")
    parser.add_argument("--run-option", action="append", default=[], help="extra run flags")
    parser.add_argument("--label", default="", help="a name for these figures (before/after)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures (JSON)")
    parser.add_argument("--runs-dir", type=Path, default=None, help="keep the runs here")
    parser.add_argument(
        "--no-server-alone", action="store_true", help="skip measuring the server alone"
    )
    args = parser.parse_args()
    report: JSON = {"label": args.label, "model": args.model, "base_url": args.base_url}
    if not args.no_server_alone:
        report["server_alone"] = server_alone(args.base_url, args.model)
        print(f"server alone: {report['server_alone']}", flush=True)
    report["agents"] = {}
    with tempfile.TemporaryDirectory(prefix="bench-real-model-") as scratch:
        folder = args.runs_dir or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for agent in args.agents.split(","):
            result = report["agents"][agent] = run_agent(args, agent, folder)
            print(f"{args.label} {agent}: {result}", flush=True)
    if args.out:
        args.out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()

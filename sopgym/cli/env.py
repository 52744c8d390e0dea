"""``sopgym env-serve``: the RL environment API (reset/step/state) over a gateway."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sopgym.cli.common import (
    domain_or_usage_error,
    fail,
)
from sopgym.cli.validation import (
    DATA_ROOT,
    HOST,
    IN_FLIGHT,
    port_option,
)


@click.command("env-serve")
@click.option("--gateway", "gateway_url", required=True, help="The gateway's base URL.")
@click.option("--domain", "domains", multiple=True, required=True, help="Repeatable.")
@HOST
@port_option(8090)
@DATA_ROOT
@click.option(
    "--distractors",
    default=None,
    type=click.IntRange(0),
    help="Extra, unneeded tools in each episode's catalog (default: the gateway's own count).",
)
@click.option(
    "--max-steps",
    default=64,
    show_default=True,
    type=click.IntRange(1),
    help="Actions after which an episode that has not finished is truncated.",
)
@click.option(
    "--run-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Record every ended episode into this new run folder (view, show, compare read it); "
    "its summary is written when the server stops.",
)
@click.option(
    "--score-detail",
    is_flag=True,
    help="Answer the whole score (per-field correctness, call metrics), not just the verdict.",
)
@click.option(
    "--concurrency",
    default=1000,
    show_default=True,
    type=IN_FLIGHT,
    help="Requests worked at once: each holds a thread while its step runs at the gateway, so "
    "this bounds the episodes a trainer can step at the same moment.",
)
@click.option(
    "--record-tokens",
    is_flag=True,
    help="Take each action's model turn (its token ids and logprobs, as the trainer's server "
    "returned them) and answer it in the step's info; docs/tokens.md.",
)
def env_serve(
    gateway_url: str,
    domains: tuple[str, ...],
    host: str,
    port: int,
    data_root: Path | None,
    distractors: int | None,
    max_steps: int,
    run_dir: Path | None,
    score_detail: bool,
    concurrency: int,
    record_tokens: bool,
) -> None:
    """Serve the RL environment API (reset/step/state over HTTP) on the given gateway."""
    from sopgym.env.server import build
    from sopgym.orchestration.recorder import recorder_for
    from sopgym.serving import serve

    for name in domains:
        domain_or_usage_error(name)
    try:
        recorder = recorder_for(run_dir, [*domains], agent="env", data_root=data_root,
                                source="env-serve")  # fmt: skip
    except FileExistsError as error:
        fail(str(error))
    if recorder is not None:  # uvicorn re-raises the SIGTERM it stopped on: end, summarised
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(
            build(gateway_url, [*domains], data_root, distractors=distractors,
                  max_steps=max_steps, recorder=recorder, score_detail=score_detail,
                  concurrency=concurrency, record_tokens=record_tokens),
            host,
            port,
        )  # fmt: skip
    finally:
        if recorder is not None:
            recorder.close()

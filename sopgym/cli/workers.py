"""The worker and simulator commands: ``agent-worker``, ``model-server``, ``user-sim`` (the
servers' own entry points live with them: ``services/model/main.py``, ``services/user/main.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import orjson

from sopgym.agents import DEFAULT_AGENT
from sopgym.agents.models import ModelUnavailable
from sopgym.cli.common import (
    entry_point_errors,
    model_unavailable,
)
from sopgym.cli.leases import run_lease_command
from sopgym.cli.scaleout import run_shard_command, shard_options
from sopgym.cli.validation import (
    AGENT_HELP,
    DATA_ROOT,
    HOST,
    IN_FLIGHT,
    MODEL_HELP,
    PORT,
    SECONDS,
    PluginName,
    port_option,
)
from sopgym.client.transports import TRANSPORT_PLUGINS
from sopgym.orchestration.scaleout import worker_metrics


@click.command("agent-worker")
@click.option(
    "--gateway",
    "gateway_url",
    required=True,
    help="The gateway: base URL (http transport) or host:port (grpc transport).",
)
@click.option(
    "--transport",
    type=PluginName(TRANSPORT_PLUGINS),
    default="http",
    show_default=True,
    help="How the worker reaches the gateway (the mcp agent always uses MCP).",
)
@click.option(
    "--agent",
    default="oracle",
    show_default=True,
    help=f"Agent: {AGENT_HELP}. The default differs from sopgym run's ({DEFAULT_AGENT}): a "
    "worker started by hand needs no model endpoint to prove the path; runs and shards name "
    "their agent.",
)
@click.option(
    "--model",
    default="scripted",
    show_default=True,
    help=MODEL_HELP,
)
@click.option("--base-url", default=None, help="The model's OpenAI-compatible endpoint (…/v1).")
@click.option(
    "--task-timeout", default=300.0, show_default=True, type=SECONDS, help="Seconds per task."
)
@click.option("--options", default="{}", help="Agent options as a JSON object.")
@click.option(
    "--concurrency",
    default=1,
    show_default=True,
    type=IN_FLIGHT,
    help="Episodes this worker holds in flight at once (one thread each).",
)
@click.option(
    "--leases",
    "lease_service",
    default=None,
    metavar="URL",
    envvar="SOPGYM_RUN_SERVICE",
    help="Lease mode: work the run served by this run service (sopgym run-service) until "
    "every task has a result, --concurrency episodes at once ($SOPGYM_RUN_SERVICE). Exit "
    "status: 0 run done, 2 refused by the run (usage), 3 run service/gateway/model "
    "unreachable past --wait, 143 SIGTERM (leases given back).",
)
@shard_options
@click.option(
    "--metrics-port",
    type=PORT,
    default=None,
    help="Serve Prometheus metrics (GET /metrics) and GET /healthz on this port.",
)
@click.option(
    "--metrics-host",
    default="0.0.0.0",
    show_default=True,
    help="Address the --metrics-port server listens on.",
)
def agent_worker(
    gateway_url: str,
    transport: str,
    agent: str,
    model: str,
    base_url: str | None,
    task_timeout: float,
    options: str,
    concurrency: int,
    lease_service: str | None,
    metrics_port: int | None,
    metrics_host: str,
    **shard: Any,
) -> None:
    """Work tasks read as JSON lines on stdin, one result line per task on stdout; or, with
    --leases, the run service's tasks until the run is done; or, with --shard, one shard of
    --domain's tasks taken from the gateway, results in --run-dir."""
    from sopgym.agents.worker import serve
    from sopgym.core.access import drop_privileges
    from sopgym.observability.tracing import setup_tracing

    # before any agent code: a worker runs untrusted code, which must reach neither the
    # runner's nor the servers' memory (secrets, gold), nor its sibling workers'
    drop_privileges()
    try:
        agent_options = orjson.loads(options)
    except orjson.JSONDecodeError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="--options") from None
    if not isinstance(agent_options, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--options")
    setup_tracing("sopgym-agent-worker", {"gen_ai.agent.name": agent})
    observe = worker_metrics(agent, model, metrics_host, metrics_port)
    if lease_service is not None and shard["shard"] is not None:
        raise click.UsageError("--leases and --shard are two modes: give one")
    if shard["shard"] is not None and concurrency > 1:  # never a knob that silently does nothing
        raise click.UsageError(
            "--concurrency holds many episodes with --leases or jobs on stdin; --shard works "
            "its shard one episode at a time (use --leases for many per process)"
        )
    try:
        if lease_service is not None:
            run_lease_command(
                gateway_url, transport, agent, model, base_url, task_timeout, agent_options,
                concurrency, observe, service=lease_service, wait_s=shard["wait_s"],
                outage_wait=shard["outage_wait"],
            )  # fmt: skip
            return
        if shard["shard"] is not None:
            run_shard_command(
                gateway_url, transport, agent, model, base_url, task_timeout, agent_options,
                observe, **shard,
            )  # fmt: skip
            return
        if base_url:
            agent_options["base_url"] = base_url
        serve(
            agent,
            gateway_url,
            task_timeout,
            {"model": model, **agent_options},
            transport=transport,
            observe=observe,
            concurrency=concurrency,
            freeze_heap=True,
        )
    except ModelUnavailable as error:
        model_unavailable(error)
    except ValueError as error:  # a gateway address of the wrong form, found before any job
        raise click.BadParameter(str(error), param_hint="--gateway") from None


@click.command("model-server")
@HOST
@port_option(8200)
@click.option(
    "--domain",
    "domains",
    multiple=True,
    envvar="SOPGYM_MODEL_DOMAINS",
    help="Domain whose tasks the model knows (a name, a family or a glob); repeat (default: "
    "every domain; $SOPGYM_MODEL_DOMAINS: space-separated). Start-up generates only these.",
)
@click.option(
    "--profile",
    default="perfect",
    show_default=True,
    help="Profile for requests whose model name does not say scripted:<profile>: errors "
    "(noisy, kind=rate, ...) and latency (gpu, latency=S, ttft=, prefill=, tpot=, "
    "decode_slowdown=, capacity=, kv_cache=; docs/model-latency.md).",
)
@click.option(
    "--injection-log",
    type=click.Path(path_type=Path),
    default=None,
    help="JSONL file recording every mistake the model injects, per task.",
)
@DATA_ROOT
def model_server(
    host: str,
    port: int,
    domains: tuple[str, ...],
    profile: str,
    injection_log: Path | None,
    data_root: Path | None,
) -> None:
    """Serve the scripted model offline: OpenAI Chat Completions, Anthropic Messages and Bedrock
    Converse endpoints; GET /v1/stats shows the simulated GPU's figures."""
    from sopgym.services.model.main import serve_model

    with entry_point_errors():
        serve_model(domains, host, port, profile, injection_log, data_root)


@click.command("user-sim")
@HOST
@port_option(8300)
@click.option(
    "--domain",
    "domains",
    multiple=True,
    help="Dialogue domain whose users to simulate; repeat (default: every dialogue domain).",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of the rule-based users' choices (default: each domain's own, as in its gold).",
)
@click.option(
    "--model",
    default=None,
    help="Play the users with a language model (openai:<model>, anthropic:<model>, ...) "
    "instead of the domain's rules.",
)
@click.option("--base-url", default=None, help="The user model's OpenAI-compatible endpoint.")
@DATA_ROOT
def user_sim(
    host: str,
    port: int,
    domains: tuple[str, ...],
    seed: int | None,
    model: str | None,
    base_url: str | None,
    data_root: Path | None,
) -> None:
    """Serve the simulated users of dialogue domains (POST /v1/reply), for the gateway."""
    from sopgym.services.user.main import serve_users

    with entry_point_errors():
        serve_users(domains, host, port, seed, model, base_url, data_root)

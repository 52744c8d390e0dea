"""The embedded stack: the domains' tool services and the gateway as loopback subprocesses.

The tool services run in ``service_groups`` processes (one by default): a process serves its
domains each in its own app over its own data (:mod:`sopgym.services.tools.group`), so the
interpreter and libraries every service needs are paid for once per group, not per domain.
An imported domain (:data:`~sopgym.core.imported.PREFIXES`) runs foreign code, its benchmark's
``tools.py``, inside its tool service: it always has a process of its own, so that code can
patch, read or starve no other domain's service. The process that starts the stack turns
itself non-dumpable first (:func:`~sopgym.core.access.make_undumpable`): it holds the secrets
and, in a run, the gold, and the agent workers it starts run as its user.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sopgym.agents.models import is_scripted
from sopgym.core.access import ADMIN_TOKEN_ENV, SERVICE_SECRET_ENV, make_undumpable, new_secret
from sopgym.core.imported import PREFIXES as IMPORTED_PREFIXES
from sopgym.core.imported import TOOL_SEED_ENV
from sopgym.core.registry import load_domain
from sopgym.gateway.local import is_tool_free
from sopgym.orchestration.processes import ManagedProcess, ProcessGroup, free_port, sopgym_command
from sopgym.services.tools.group import mount_path


@dataclass
class Stack:
    group: ProcessGroup
    logs: Path
    gateway_url: str = ""
    admin_token: str = ""
    services: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # for every child: OTEL_* when traced
    model_url: str | None = None  # the scripted model server's /v1 base URL, when started
    grpc_target: str | None = None  # the gateway's gRPC host:port, when it serves gRPC
    user_sim_url: str | None = None  # the user simulator, when a dialogue domain needs one
    local_domains: list[str] = field(default_factory=list)  # tool-free: the gateway serves them
    seed: int = 0  # the run's seed, for every part of the stack that draws at random
    service_secret: str = ""  # the gateway's proof to the tool services, fresh per stack


@contextmanager
def embedded_stack(
    domains: list[str],
    logs: Path,
    data_root: Path | None = None,
    distractors: int = 0,
    traces: Path | None = None,
    model: str | None = None,
    injection_log: Path | None = None,
    grpc: bool = False,
    seed: int = 0,
    faults: str | None = None,
    service_groups: int = 1,
) -> Iterator[Stack]:
    """Start the services and the gateway (all at once); stop everything on the way out.

    With ``traces``, an OTLP receiver writing the trace store there starts first, and every
    child (``stack.env``) exports its spans to it. With a ``scripted[:profile]`` ``model``,
    the scripted model server starts alongside the tool services, logging the mistakes it
    injects to ``injection_log``. With ``grpc``, the gateway also serves gRPC
    (``stack.grpc_target``). When a domain has a simulated user (dialogue), the user
    simulator starts too and the gateway talks to it (``stack.user_sim_url``). Tool-free
    domains get no tool service: the gateway serves them itself. ``seed`` salts the gateway's
    distractor draws and, when not 0, the simulated users' wording (0 keeps each pack's own
    seed, the one its gold conversations were made with). ``faults`` is the gateway's fault
    injection spec (:mod:`sopgym.gateway.faults`), drawn from ``seed``. The domains with tools
    are served by ``service_groups`` processes (fewer when there are fewer such domains).
    """
    # This process (the runner, the load test) holds the stack's secrets and, for a run,
    # every task's gold; the agent workers it starts next run untrusted code as its user
    make_undumpable()
    with ProcessGroup() as group:
        stack = Stack(
            group=group,
            logs=logs,
            admin_token=secrets.token_urlsafe(24),
            seed=seed,
            service_secret=new_secret(),
        )
        if traces is not None:
            from sopgym.orchestration.embedded import start_collector

            stack.env = start_collector(group, traces, logs)
        data_args = ["--data-root", str(data_root)] if data_root else []
        children = []
        tooled = []
        for domain in domains:
            if is_tool_free(load_domain(domain)):
                stack.local_domains.append(domain)
            else:
                tooled.append(domain)
        for index, members in enumerate(split_groups(tooled, service_groups), 1):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            alone = len(members) == 1  # served at the root, as in compose and k8s
            for domain in members:
                stack.services[domain] = url if alone else url + mount_path(domain)
            name = f"tools-{members[0]}" if alone else f"tools-group{index}"
            children.append(
                group.start(
                    name,
                    sopgym_command("serve-tools", *members, "--port", str(port), *data_args),
                    logs / f"{name.replace('/', '__')}.log",
                    # (TOOL_SEED_ENV: imported tools' random draws follow the run's seed)
                    env={**stack.env, TOOL_SEED_ENV: str(seed)},
                    secrets={SERVICE_SECRET_ENV: stack.service_secret},
                    ready_url=f"{url}/readyz",
                )
            )
        if model is not None and is_scripted(model):
            children.append(start_model_server(stack, domains, data_args, injection_log))
        talkers = [d for d in domains if load_domain(d).user is not None]
        if talkers:
            children.append(_start_user_sim(stack, talkers, data_args))
        port = free_port()
        stack.gateway_url = f"http://127.0.0.1:{port}"
        service_args = [a for d, u in stack.services.items() for a in ("--service", f"{d}={u}")]
        service_args += [a for d in stack.local_domains for a in ("--local-domain", d)]
        if stack.local_domains:
            service_args += data_args
        if grpc:
            grpc_port = free_port()
            stack.grpc_target = f"127.0.0.1:{grpc_port}"
            service_args += ["--grpc-port", str(grpc_port)]
        if stack.user_sim_url:
            service_args += ["--user-sim", stack.user_sim_url]
        if faults:
            service_args += ["--faults", faults]
        gateway = group.start(  # now, not once they are ready: it waits for their catalogs
            "gateway",
            sopgym_command(
                "gateway",
                "--port",
                str(port),
                "--distractors",
                str(distractors),
                "--seed",
                str(seed),
                *service_args,
            ),
            logs / "gateway.log",
            env=stack.env,
            secrets={ADMIN_TOKEN_ENV: stack.admin_token, SERVICE_SECRET_ENV: stack.service_secret},
            ready_url=f"{stack.gateway_url}/readyz",
        )
        for child in [*children, gateway]:  # a service that fails says so, not the gateway
            child.wait_ready()
        yield stack


def split_groups(domains: list[str], groups: int) -> list[list[str]]:
    """``domains`` in ``groups`` runs of consecutive names (a family stays together), as even
    in size as can be; fewer groups when there are fewer domains, none for no domain. Each
    imported domain comes after them in a group of its own, whatever ``groups`` says (its
    ``tools.py`` is foreign code: it shares no process with another domain)."""
    imported = [[name] for name in domains if name.startswith(IMPORTED_PREFIXES)]
    domains = [name for name in domains if not name.startswith(IMPORTED_PREFIXES)]
    count = max(1, min(groups, len(domains)))
    size, extra = divmod(len(domains), count)
    split, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        split.append(domains[start:end])
        start = end
    return [members for members in split if members] + imported


def start_model_server(
    stack: Stack, domains: list[str], data_args: list[str], injection_log: Path | None
) -> ManagedProcess:
    log_args = ["--injection-log", str(injection_log)] if injection_log else []
    child, url = _start_domain_server(
        stack, "model", "model-server", domains, *data_args, *log_args
    )
    stack.model_url = f"{url}/v1"
    return child


def _start_user_sim(stack: Stack, domains: list[str], data_args: list[str]) -> ManagedProcess:
    seed_args = ["--seed", str(stack.seed)] if stack.seed else []
    child, stack.user_sim_url = _start_domain_server(
        stack, "user-sim", "user-sim", domains, *seed_args, *data_args,
        secrets={SERVICE_SECRET_ENV: stack.service_secret},
    )  # fmt: skip
    return child


def _start_domain_server(
    stack: Stack,
    name: str,
    command: str,
    domains: list[str],
    *args: str,
    secrets: dict[str, str] | None = None,
) -> tuple[ManagedProcess, str]:
    """A server for ``domains`` (``sopgym <command> --domain D ...``) on a free port, logging to
    ``<name>.log``; the process (not waited for yet) and its base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    domain_args = [a for d in domains for a in ("--domain", d)]
    child = stack.group.start(
        name,
        sopgym_command(command, "--port", str(port), *domain_args, *args),
        stack.logs / f"{name}.log",
        env=stack.env,
        ready_url=f"{url}/readyz",
        secrets=secrets,
    )
    return child, url

"""The embedded stack: every domain's tool service and the gateway as loopback subprocesses."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sopgym.processes import ProcessGroup, free_port, sopgym_command

ADMIN_TOKEN_ENV = "SOPGYM_ADMIN_TOKEN"


@dataclass
class Stack:
    group: ProcessGroup
    logs: Path
    gateway_url: str = ""
    admin_token: str = ""
    services: dict[str, str] = field(default_factory=dict)


@contextmanager
def embedded_stack(
    domains: list[str], logs: Path, data_root: Path | None = None, distractors: int = 0
) -> Iterator[Stack]:
    """Start services (in parallel), then the gateway; stop everything on the way out."""
    with ProcessGroup() as group:
        stack = Stack(group=group, logs=logs, admin_token=secrets.token_urlsafe(24))
        data_args = ["--data-root", str(data_root)] if data_root else []
        children = []
        for domain in domains:
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            stack.services[domain] = url
            children.append(
                group.start(
                    f"tools-{domain}",
                    sopgym_command("serve-tools", domain, "--port", str(port), *data_args),
                    logs / f"tools-{domain.replace('/', '__')}.log",
                    ready_url=f"{url}/readyz",
                )
            )
        for child in children:
            child.wait_ready()
        port = free_port()
        stack.gateway_url = f"http://127.0.0.1:{port}"
        service_args = [a for d, u in stack.services.items() for a in ("--service", f"{d}={u}")]
        group.start(
            "gateway",
            sopgym_command(
                "gateway", "--port", str(port), "--distractors", str(distractors), *service_args
            ),
            logs / "gateway.log",
            env={ADMIN_TOKEN_ENV: stack.admin_token},
            ready_url=f"{stack.gateway_url}/readyz",
        ).wait_ready()
        yield stack

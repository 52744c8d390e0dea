"""A replicated stack on loopback: N gateway replicas and M replicas of each tool service,
with HAProxy in front of the gateways, as a Kubernetes Service spreads requests over pods.

Episode affinity needs no proxy rule (docs/deploy.md, "Scaling out"): whichever replica opens
an episode returns its own address, and the client sends the episode's later requests there;
each gateway pins every episode to one replica of each tool service. The proxy, in TCP mode
like kube-proxy, only spreads connections (a replicated gateway's client opens each episode on
a new one) and skips a replica whose health check fails. Used by tests/test_scaleout.py and
bench/bench_scaleout.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sopgym.core.access import ADMIN_TOKEN_ENV, SERVICE_SECRET_ENV, new_secret
from sopgym.core.exceptions import UsageError
from sopgym.orchestration.processes import ManagedProcess, ProcessGroup, free_port, sopgym_command
from sopgym.orchestration.stack import Stack, start_model_server

# TCP mode, round robin over connections: as a Kubernetes Service (kube-proxy) balances
HAPROXY_CONFIG = """\
global
    maxconn 4096
defaults
    mode tcp
    retries 2
    option redispatch
    timeout connect 2s
    timeout client 120s
    timeout server 120s
frontend gateway
    bind 127.0.0.1:{port}
    default_backend gateway_replicas
backend gateway_replicas
    balance roundrobin
    option httpchk GET /healthz
{servers}
"""
HAPROXY_GRPC = """\
frontend gateway_grpc
    bind 127.0.0.1:{port}
    default_backend gateway_grpc_replicas
backend gateway_grpc_replicas
    balance roundrobin
{servers}
"""


class ProxyMissing(UsageError, RuntimeError):
    """HAProxy is not installed (Debian: ``apt-get install haproxy``)."""


@dataclass
class ReplicatedStack:
    url: str  # the proxy: the address every client is given
    gateways: list[ManagedProcess] = field(default_factory=list)
    gateway_urls: list[str] = field(default_factory=list)
    grpc_target: str | None = None  # the proxy's gRPC port, when the gateways serve gRPC
    grpc_targets: list[str] = field(default_factory=list)  # each replica's
    tools: dict[str, list[ManagedProcess]] = field(default_factory=dict)
    tool_urls: dict[str, list[str]] = field(default_factory=dict)
    model_url: str | None = None
    admin_token: str = ""
    model: ManagedProcess | None = None  # the scripted model server, when started
    proxy: ManagedProcess | None = None  # HAProxy


def haproxy_binary() -> str | None:
    """HAProxy's path; Debian installs it in /usr/sbin, off a normal user's PATH."""
    return shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/sbin")


@contextmanager
def replicated_stack(
    domains: list[str],
    logs: Path,
    gateways: int = 2,
    tool_replicas: int = 2,
    model: bool = False,
    data_root: Path | None = None,
    grpc: bool = False,
) -> Iterator[ReplicatedStack]:
    """Start ``tool_replicas`` replicas of each domain's tool service, the scripted model
    server when ``model``, ``gateways`` gateway replicas (serving gRPC too when ``grpc``) and
    HAProxy in front of them."""
    haproxy = haproxy_binary()
    if haproxy is None:
        raise ProxyMissing("the replicated stack needs HAProxy: apt-get install haproxy")
    secret = new_secret()
    data_args = ["--data-root", str(data_root)] if data_root else []
    with ProcessGroup() as group:
        stack = Stack(group=group, logs=logs, service_secret=secret)
        replicated = ReplicatedStack(url="", admin_token=new_secret())
        children = []
        for domain in domains:
            for index in range(tool_replicas):
                port = free_port()
                url = f"http://127.0.0.1:{port}"
                child = group.start(
                    f"tools-{domain}-{index}",
                    sopgym_command("serve-tools", domain, "--port", str(port), *data_args),
                    logs / f"tools-{domain.replace('/', '__')}-{index}.log",
                    secrets={SERVICE_SECRET_ENV: secret},
                    ready_url=f"{url}/readyz",
                )
                replicated.tools.setdefault(domain, []).append(child)
                replicated.tool_urls.setdefault(domain, []).append(url)
                children.append(child)
        if model:
            replicated.model = start_model_server(stack, domains, data_args, None)
            replicated.model_url = stack.model_url
            children.append(replicated.model)
        for child in children:
            child.wait_ready()
        services = [
            a
            for d, urls in replicated.tool_urls.items()
            for a in ("--service", f"{d}={','.join(urls)}")
        ]
        for index in range(gateways):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            grpc_args = []
            if grpc:
                target = f"127.0.0.1:{free_port()}"
                replicated.grpc_targets.append(target)
                grpc_args = ["--grpc-port", target.split(":")[1], "--advertise-grpc", target]
            argv = ["gateway", "--port", str(port), "--advertise-url", url, *grpc_args, *services]
            replicated.gateways.append(
                group.start(
                    f"gateway-{index}",
                    sopgym_command(*argv),
                    logs / f"gateway-{index}.log",
                    secrets={ADMIN_TOKEN_ENV: replicated.admin_token, SERVICE_SECRET_ENV: secret},
                    ready_url=f"{url}/readyz",
                )
            )
            replicated.gateway_urls.append(url)
        for gateway in replicated.gateways:
            gateway.wait_ready()
        port = free_port()
        servers = "\n".join(
            f"    server gateway-{i} {url.removeprefix('http://')} check inter 500ms fall 1"
            for i, url in enumerate(replicated.gateway_urls)
        )
        text = HAPROXY_CONFIG.format(port=port, servers=servers)
        if grpc:
            grpc_port = free_port()
            replicated.grpc_target = f"127.0.0.1:{grpc_port}"
            text += HAPROXY_GRPC.format(port=grpc_port, servers="\n".join(
                f"    server gateway-{i} {target} check inter 500ms fall 1"
                for i, target in enumerate(replicated.grpc_targets)
            ))  # fmt: skip
        config = logs / "haproxy.cfg"
        config.write_text(text)
        replicated.url = f"http://127.0.0.1:{port}"
        replicated.proxy = group.start(
            "haproxy",
            [haproxy, "-db", "-f", str(config)],
            logs / "haproxy.log",
            ready_url=f"{replicated.url}/healthz",
        )
        replicated.proxy.wait_ready()
        yield replicated

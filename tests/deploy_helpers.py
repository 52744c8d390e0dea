"""Reading the deployment files as the tools would: compose interpolation, CLI parsing of
container commands, rendering kustomize overlays."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import click
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "compose" / "docker-compose.yml"
COMPOSE_HOST = ROOT / "compose" / "docker-compose.host.yml"  # host networking only
ENV_FILES = {"scripted": ROOT / "compose" / ".env", "gpu": ROOT / "compose" / "gpu.env"}
OVERLAYS = ("local", "gpu")
ALL_OVERLAYS = ("local", "gpu", "loadtest")
SECRET_OVERLAYS = ("local", "gpu")  # those with a secretGenerator (loadtest builds on local)
DOCKERFILES = {
    "tools": ROOT / "services" / "tools" / "Dockerfile",
    "gateway": ROOT / "gateway" / "Dockerfile",
    "agents": ROOT / "agents" / "Dockerfile",
    "model": ROOT / "services" / "model" / "Dockerfile",
    "user": ROOT / "services" / "user" / "Dockerfile",
    "observability": ROOT / "observability" / "Dockerfile",
}
KUSTOMIZE = ["kubectl", "kustomize"]  # as users render it: no flags
_VARIABLE = re.compile(r"\$\{(\w+)(?::?([-?])([^}]*))?\}")
# What an operator exports before `docker compose up` (the file gives it no default).
OPERATOR_ENV = {"SOPGYM_SERVICE_SECRET": "a-secret-the-operator-exported"}


def env_file(path: Path) -> dict[str, str]:
    pairs = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's ``${VAR}`` / ``${VAR:-default}`` substitution over a loaded document."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: _substitute(m, env), value)
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def _substitute(match: re.Match[str], env: dict[str, str]) -> str:
    name, kind, rest = match.groups()
    if env.get(name):
        return env[name]
    if kind == "?":  # ${VAR:?message}: compose refuses to start without it
        raise KeyError(f"{name} is required: {rest}")
    return rest or ""


def compose(
    profile: str = "scripted", exported: dict[str, str] = OPERATOR_ENV, path: Path = COMPOSE
) -> dict[str, Any]:
    """The compose file (``path``: another variant) with anchors merged and variables set from
    the profile's env file and what the operator ``exported``."""
    env = {**env_file(ENV_FILES[profile]), **exported}
    return interpolate(yaml.safe_load(path.read_text()), env)


def sopgym_services(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Services that run one of our images (and so a sopgym CLI command)."""
    return {
        name: service
        for name, service in document["services"].items()
        if str(service.get("image", "")).startswith("sopgym/")
    }


@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def parse_cli(argv: list[str], env: dict[str, str] | None = None) -> click.Context:
    """Parse ``sopgym <argv>`` with the real CLI (options read from ``env`` where the command
    takes them from the environment); raises :class:`click.ClickException` on any mistake."""
    from sopgym.cli import main

    command = main.get_command(click.Context(main), argv[0])
    if command is None:
        raise click.UsageError(f"no sopgym command {argv[0]!r}")
    with environment(env or {}):
        return command.make_context(f"sopgym {argv[0]}", list(argv[1:]))


@cache
def deployed_k8s() -> Path:
    """A copy of ``k8s/`` as an operator prepares it: every overlay given its own service
    secret by ``k8s/make-secret.sh`` (the files are never committed, so the checkout has none)."""
    copy = Path(tempfile.mkdtemp(prefix="sopgym-k8s-")) / "k8s"
    atexit.register(shutil.rmtree, copy.parent, ignore_errors=True)
    shutil.copytree(ROOT / "k8s", copy, ignore=shutil.ignore_patterns("service-secret.env"))
    for overlay in SECRET_OVERLAYS:
        subprocess.run(["sh", str(copy / "make-secret.sh"), str(copy / "overlays" / overlay)],
                       check=True, capture_output=True)  # fmt: skip
    return copy


@cache
def render(overlay: str) -> list[dict[str, Any]]:
    """The overlay's manifests as ``kubectl kustomize`` renders them (once per session), after
    the operator's one preparation step (``k8s/make-secret.sh``)."""
    return kustomize(deployed_k8s() / "overlays" / overlay)


def kustomize(folder: Path) -> list[dict[str, Any]]:
    out = subprocess.run([*KUSTOMIZE, str(folder)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def dockerfile(path: Path) -> dict[str, list[Any]]:
    """A Dockerfile's instructions by keyword, parsed by BuildKit's own parser (the
    ``dockerfile`` package binds the official Go parser): each is ``(flags, values)``."""
    import dockerfile as parser

    found: dict[str, list[Any]] = {}
    for command in parser.parse_file(str(path)):
        found.setdefault(command.cmd.upper(), []).append((command.flags, command.value))
    return found


def by_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def container_env(doc: dict, configmaps: dict[str, dict]) -> dict[str, str]:
    """The environment a container sees from its ConfigMaps (for $(VAR) in its args)."""
    env = {}
    container = doc["spec"]["template"]["spec"]["containers"][0]
    for source in container.get("envFrom", []):
        ref = source.get("configMapRef")
        if ref:
            env.update(configmaps[ref["name"]]["data"])
    for item in container.get("env", []):
        ref = item.get("valueFrom", {}).get("configMapKeyRef")
        if ref:
            env[item["name"]] = configmaps[ref["name"]]["data"][ref["key"]]
        elif "value" in item:
            env[item["name"]] = item["value"]
        else:
            env[item["name"]] = "0"  # fieldRef / secret: a placeholder
    return env


def expand(arg: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion in container args."""
    return re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], arg)

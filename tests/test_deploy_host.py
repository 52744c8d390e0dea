"""compose/docker-compose.host.yml, the variant for a Docker daemon with no bridge network
(issue 47): every container on the host network, each on its own loopback port, reaching the
others at 127.0.0.1; the same sopgym services and domains as docker-compose.yml."""

from __future__ import annotations

import re
import subprocess
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.deploy_helpers import (
    COMPOSE_HOST,
    ENV_FILES,
    OPERATOR_ENV,
    compose,
    have,
    parse_cli,
    sopgym_services,
)

_URL = re.compile(r"\b\w+://[^\s,]+")


def _host() -> dict[str, Any]:
    return compose(path=COMPOSE_HOST)


def _option(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


def _listens(document: dict[str, Any]) -> dict[str, list[int]]:
    """Service -> the loopback ports its command listens on (a profile's service included)."""
    ports: dict[str, list[int]] = {}
    for name, service in document["services"].items():
        command = [str(a) for a in service.get("command", [])]
        found = [_option(command, o) for o in ("--port", "--grpc-port")]
        ports[name] = [int(p) for p in found if p is not None]
    return ports


@pytest.mark.skipif(not have("docker-compose"), reason="docker-compose absent (CI installs it)")
@pytest.mark.parametrize("profile", sorted(ENV_FILES))
def test_docker_compose_accepts_the_host_variant(profile: str) -> None:
    result = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE_HOST), "--env-file", str(ENV_FILES[profile]),
         "--profile", "loadtest", "config", "-q"],
        capture_output=True, text=True, env={**OPERATOR_ENV, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_every_container_runs_and_builds_on_the_host_network_publishing_nothing() -> None:
    for name, service in _host()["services"].items():
        assert service.get("network_mode") == "host", name
        assert "ports" not in service and "networks" not in service, name
        if "build" in service:
            assert service["build"].get("network") == "host", name


def test_the_host_variant_runs_the_same_sopgym_services_and_domains() -> None:
    base, host = compose(), _host()
    assert set(sopgym_services(host)) == set(sopgym_services(base))

    def domains(document: dict[str, Any]) -> list[str]:
        return sorted(str(s["command"][1]) for s in document["services"].values()
                      if s.get("command", [None])[0] == "serve-tools")  # fmt: skip

    assert domains(host) == domains(base)


def test_each_service_has_its_own_loopback_port_and_every_address_is_one_of_them() -> None:
    host = _host()
    listens = _listens(host)
    every = [p for ports in listens.values() for p in ports]
    assert len(every) == len(set(every)), f"two services on one host port: {listens}"
    for name, service in host["services"].items():
        command = [str(a) for a in service.get("command", [])]
        if "--host" in command:
            assert _option(command, "--host") == "127.0.0.1", name
        texts = [*command, *(str(v) for v in (service.get("environment") or {}).values())]
        for url in (u for text in texts for u in _URL.findall(text)):
            parts = urlsplit(url)
            assert parts.hostname == "127.0.0.1", f"{name}: {url}"
            assert parts.port in every, f"{name}: nothing listens on {url}"
    for text in (str(a) for s in host["services"].values() for a in s.get("command", [])):
        if text.startswith("--gateway") or ":" not in text or "://" in text:
            continue
        assert not re.fullmatch(r"[a-z][\w-]*:\d+", text), f"a service name in {text!r}"


def test_the_gateway_reaches_each_domain_at_its_own_tool_service() -> None:
    host = _host()
    listens = _listens(host)
    gateway = host["services"]["gateway"]["environment"]
    wired = dict(item.split("=", 1) for item in gateway["SOPGYM_GATEWAY_SERVICES"].split())
    served = {str(s["command"][1]): name for name, s in host["services"].items()
              if s.get("command", [None])[0] == "serve-tools"}  # fmt: skip
    assert set(wired) == set(served)
    for domain, url in wired.items():
        assert urlsplit(url).port in listens[served[domain]], domain
    assert urlsplit(gateway["SOPGYM_USER_SIM"]).port in listens["user-sim"]


def test_every_sopgym_command_of_the_host_variant_parses_with_the_cli() -> None:
    for name, service in sopgym_services(_host()).items():
        env = {k: str(v) for k, v in (service.get("environment") or {}).items()}
        try:
            parse_cli([str(a) for a in service["command"]], env)
        except Exception as error:  # one assertion naming the service
            pytest.fail(f"{name}: {error}")

"""What each container image carries: its role's dependencies, and what it must not carry.

Every Dockerfile installs in two layers (compose/install.sh): first the role's dependencies,
from ``compose/requirements/<role>.txt``, a layer whose cache key is that file (and
install.sh) alone, so it changes only when the role's requirements do; then sopgym itself with
``--no-deps``, the only layer a source edit rebuilds. The requirement files are written here
from ``pyproject.toml`` by name (``python images.py lock``), so versions never drift from the
package's; a test checks they are current. A role gets only what its commands import: the gateway no
LangGraph, the agents no pandas; and the agents image drops the domain packs' generators,
solvers and tool implementations, so nothing in it can rebuild the gold.

Stand-alone on purpose (standard library only), so it runs before sopgym is installed::

    python sopgym/orchestration/images.py lock compose/requirements pyproject.toml
    python images.py prune agents /usr/local/lib/python3.11/site-packages/sopgym
    python images.py check agents    # after the install: imports what it runs, not the gold
"""

from __future__ import annotations

import re
import shutil
import sys
import tomllib
from pathlib import Path

# by distribution name, as pyproject.toml lists them (an extra like uvicorn[standard] is kept)
_COMMON = (
    "httpx", "httptools", "uvloop", "uvicorn", "orjson", "msgspec", "rich", "click",
    "jsonschema", "jsonschema-rs", "protobuf", "opentelemetry-api", "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-proto-http", "opentelemetry-proto",
    "json-repair",  # SOP-Maze's lenient reply reading (evaluation.maze_protocol): agents, merge
)  # fmt: skip
ROLES: dict[str, tuple[str, ...]] = {
    # serve-tools: a domain's tools over pandas tables (warehouse images with pillow)
    "tools": (*_COMMON, "fastapi", "pandas", "pillow"),
    # the gateway: HTTP, gRPC and MCP doors; pandas for the tool-free packs it serves itself
    "gateway": (*_COMMON, "grpcio", "googleapis-common-protos", "mcp", "pandas"),
    # agent workers: LangGraph agents, the model clients, every door of the gateway
    "agents": (
        *_COMMON,
        "grpcio",
        "googleapis-common-protos",
        "mcp",
        "langgraph",
        "langchain-core",
        "langchain-openai",
    ),
    # the scripted model server generates its domains' tasks
    "model": (*_COMMON, "fastapi", "pandas", "pillow"),
    # the user simulator: rule-based users, or a language model (--model) through the agents'
    # model clients (LangChain; langgraph for their message types); it loads every pack to
    # find the dialogue ones (warehouse's imports pillow)
    "user": (
        *_COMMON,
        "fastapi",
        "pandas",
        "pillow",
        "langgraph",
        "langchain-core",
        "langchain-openai",
    ),
    # trace receiver, merge, eval and report: the runner's scoring over regenerated gold
    "observability": (*_COMMON, "fastapi", "pandas", "pillow"),
}

# Paths under the installed ``sopgym`` package an image leaves out. The agents image may list
# domain names (registry reads pack sources without importing them) but holds no generator,
# no solver (policy.py: the gold), no tool implementation and no service.
PRUNE: dict[str, tuple[str, ...]] = {
    "agents": (
        "domains/**/generator.py",
        "domains/**/policy.py",
        "domains/**/tools",
        "domains/**/_engine",
        "domains/**/user.py",
    ),
}

# What each image must import (checked at build time, ``python images.py check ROLE``): the
# modules its commands run, so a dependency missing from ROLES fails the build, not the run.
IMPORTS: dict[str, tuple[str, ...]] = {
    # imported benchmarks load through an entry point (sopgym.core.registry), not an import:
    # the images that serve or score them name their loader here
    "tools": ("sopgym.cli", "sopgym.services.tools.app", "sopgym.serving",
              "sopgym.importers.resolve"),
    "gateway": (
        "sopgym.cli",
        "sopgym.gateway.app",
        "sopgym.gateway.grpc_server",
        "sopgym.gateway.mcp_server",
        "sopgym.gateway.local",
    ),
    "agents": (
        "sopgym.cli",
        "sopgym.agents.worker",
        "sopgym.agents.fc",
        "sopgym.agents.react",
        "sopgym.agents.plan",
        "sopgym.agents.mcp_agent",
        "sopgym.client.over_grpc",
        "sopgym.client.over_mcp",
        "sopgym.orchestration.shards",
    ),
    "model": ("sopgym.cli", "sopgym.services.model.app", "sopgym.importers.resolve"),
    "user": ("sopgym.cli", "sopgym.services.user.app", "sopgym.services.user.llm_user"),
    "observability": (
        "sopgym.cli",
        "sopgym.observability.collector",
        "sopgym.cli.evaluate",
        "sopgym.orchestration.runner",
        "sopgym.importers.resolve",
    ),
}
# Which domain packs each image loads (every pack is imported, as its commands do when they
# list domains): all of them, or the gateway's tool-free packs it serves itself.
PACKS: dict[str, str] = {
    "tools": "all",
    "model": "all",
    "user": "all",
    "observability": "all",
    "gateway": "maze maze_ablation tod/compliance tod/response banking/*_graph",
}
# ... and what it must not (the agents image: nothing that rebuilds gold)
ABSENT: dict[str, tuple[str, ...]] = {
    "agents": (
        "sopgym.domains.patient_intake.generator",
        "sopgym.domains.patient_intake.policy",
        "sopgym.domains.tod.live.generator",
    ),
}

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(role: str, pyproject: Path) -> list[str]:
    """The role's requirement lines, exactly as ``pyproject.toml`` pins them; KeyError for an
    unknown role, ValueError for a role naming a dependency the project does not declare."""
    declared: dict[str, str] = {}
    for line in tomllib.loads(pyproject.read_text())["project"]["dependencies"]:
        match = _NAME.match(line)
        if match:
            declared[_canonical(match.group(1).split("[")[0])] = line
    wanted = ROLES[role]
    missing = [n for n in wanted if _canonical(n) not in declared]
    if missing:
        raise ValueError(f"role {role} needs {missing}, which pyproject.toml does not declare")
    return [declared[_canonical(n)] for n in wanted]


HEADER = "# written by sopgym/orchestration/images.py lock from pyproject.toml: do not edit\n"


def lock(folder: Path, pyproject: Path) -> list[Path]:
    """Write ``<folder>/<role>.txt`` for every role; the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for role in ROLES:
        path = folder / f"{role}.txt"
        path.write_text(HEADER + "\n".join(requirements(role, pyproject)) + "\n")
        written.append(path)
    return written


def prune(role: str, package: Path) -> list[Path]:
    """Delete what ``role``'s image leaves out of the installed package; what was deleted."""
    gone = []
    for pattern in PRUNE.get(role, ()):
        for path in sorted(package.glob(pattern)):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            gone.append(path)
    return gone


def check(role: str) -> list[str]:
    """What is wrong with the installed package for ``role``: a module it needs that does
    not import, or one it must not carry that does (empty: nothing)."""
    import importlib

    problems = []
    for module in IMPORTS[role]:
        try:
            importlib.import_module(module)
        except ImportError as error:
            problems.append(f"{module} does not import: {error}")
    for module in ABSENT.get(role, ()):
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        problems.append(f"{module} is in the {role} image")
    if role == "agents" and not problems:  # shard mode names its domains, imports none
        from sopgym.core.registry import domain_names, select_domains

        try:
            select_domains(domain_names(extra=""))
        except ImportError as error:
            problems.append(f"domains cannot be named without their packs: {error}")
    if role in PACKS and not problems:
        from sopgym.core.registry import load_domain, select_domains

        for name in select_domains(PACKS[role].split()):
            try:
                load_domain(name)
            except ImportError as error:
                problems.append(f"domain pack {name} does not import: {error}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "lock":
        for path in lock(Path(argv[1]), Path(argv[2])):
            print(f"wrote {path}")
        return 0
    if len(argv) == 3 and argv[0] == "prune":
        print(f"pruned {len(prune(argv[1], Path(argv[2])))} path(s) for the {argv[1]} image")
        return 0
    if len(argv) == 2 and argv[0] == "check":
        problems = check(argv[1])
        print("\n".join(problems) or f"the {argv[1]} image imports what it runs", file=sys.stderr)
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The deployment files as a cluster runs them (issue 32): every rendered overlay runs tagged
images only and requires its own service secret; the user simulator is deployed and the
gateway talks to it; start-up does not hang on the slowest container; each image carries its
role's dependencies, and the agents image no gold-building code."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sopgym.orchestration import images
from tests.deploy_helpers import (
    ALL_OVERLAYS,
    KUSTOMIZE,
    ROOT,
    by_kind,
    compose,
    deployed_k8s,
    have,
    parse_cli,
    render,
)

needs_kubectl = pytest.mark.skipif(not have("kubectl"), reason="kubectl absent (CI installs it)")


def _pod_specs(docs: list[dict]) -> dict[str, dict]:
    specs = {}
    for doc in docs:
        template = doc.get("spec", {}).get("template", {}).get("spec")
        if template is not None:
            specs[f"{doc['kind']}/{doc['metadata']['name']}"] = template
    return specs


# ---- (5) tagged images everywhere, (6) a required secret, in every overlay ----
@needs_kubectl
@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_every_overlay_runs_tagged_images_and_requires_its_service_secret(overlay: str) -> None:
    docs = render(overlay)
    for name, spec in _pod_specs(docs).items():
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            image = container["image"]
            tag = image.rsplit("/", 1)[-1].partition(":")[2]
            assert tag and tag != "latest", f"{overlay}: {name} runs {image} untagged"
    (secret,) = [s for n, s in by_kind(docs, "Secret").items()
                 if n.startswith("sopgym-service-secret")]  # fmt: skip
    assert set(secret["data"]) == {"SOPGYM_SERVICE_SECRET"}
    assert secret["data"]["SOPGYM_SERVICE_SECRET"], "generated, never empty"
    api_keys = next(s for n, s in by_kind(docs, "Secret").items() if n.startswith("sopgym-api"))
    assert "SOPGYM_SERVICE_SECRET" not in api_keys["data"], "no empty optional copy"
    holders = [n for n in _pod_specs(docs) if n == "Deployment/gateway" or "tools-" in n]
    assert len(holders) >= 2
    for name in holders:
        (container,) = _pod_specs(docs)[name]["containers"]
        (ref,) = [e["valueFrom"]["secretKeyRef"] for e in container.get("env", [])
                  if e["name"] == "SOPGYM_SERVICE_SECRET"]  # fmt: skip
        assert ref["name"] == secret["metadata"]["name"], name
        assert not ref.get("optional"), f"{overlay}: {name} would run open without it"


@needs_kubectl
def test_an_overlay_without_its_generated_secret_does_not_build(tmp_path: Path) -> None:
    copy = tmp_path / "k8s"
    shutil.copytree(deployed_k8s(), copy)
    (copy / "overlays" / "local" / "service-secret.env").unlink()
    result = subprocess.run([*KUSTOMIZE, str(copy / "overlays" / "local")], capture_output=True)
    assert result.returncode != 0
    assert b"service-secret.env" in result.stderr


def test_the_generated_secret_is_never_committed() -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "k8s/overlays/local/service-secret.env"], cwd=ROOT
    )
    assert ignored.returncode == 0


def test_make_secret_draws_a_fresh_secret_per_deployment_and_keeps_it(tmp_path: Path) -> None:
    values = []
    for folder in (tmp_path / "a", tmp_path / "b"):
        folder.mkdir()
        for _ in range(2):  # a second run keeps the first secret
            subprocess.run(["sh", str(ROOT / "k8s" / "make-secret.sh"), str(folder)], check=True,
                           capture_output=True)  # fmt: skip
        text = (folder / "service-secret.env").read_text()
        key, _, value = text.strip().partition("=")
        assert key == "SOPGYM_SERVICE_SECRET" and len(value) == 64
        assert (folder / "service-secret.env").stat().st_mode & 0o077 == 0, "owner-only"
        values.append(value)
    assert values[0] != values[1]


# ---- (1) the user simulator, in k8s and compose ----
@needs_kubectl
@pytest.mark.parametrize("overlay", ALL_OVERLAYS)
def test_the_gateway_talks_to_a_deployed_user_simulator(overlay: str) -> None:
    docs = render(overlay)
    user = by_kind(docs, "Deployment")["user-sim"]
    (container,) = user["spec"]["template"]["spec"]["containers"]
    assert container["image"].split(":")[0].endswith("sopgym/user")
    parse_cli(container["args"])
    assert "user-sim" in by_kind(docs, "Service")
    config = next(
        c for n, c in by_kind(docs, "ConfigMap").items() if n.startswith("sopgym-gateway")
    )
    assert config["data"]["SOPGYM_USER_SIM"] == "http://user-sim:8300"
    policies = by_kind(docs, "NetworkPolicy")
    assert policies["user-sim-from-gateway-only"]["spec"]["podSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "user-sim"
    }


def test_compose_runs_the_user_simulator_and_starts_without_waiting_on_health() -> None:
    services = compose()["services"]
    user = services["user-sim"]
    assert user["build"]["dockerfile"] == "services/user/Dockerfile"
    parse_cli(user["command"])
    gateway = services["gateway"]
    assert gateway["environment"]["SOPGYM_USER_SIM"] == "http://user-sim:8300"
    # (7) one slow container must not abort `up`: the gateway waits for its services itself
    conditions = {v["condition"] for v in gateway["depends_on"].values()}
    assert conditions == {"service_started"}
    assert float(gateway["environment"]["SOPGYM_GATEWAY_DISCOVER_WAIT"]) >= 300
    assert services["model"]["environment"]["SOPGYM_MODEL_DOMAINS"] == "patient_intake"
    # (4) an init as PID 1 for every sopgym container
    for name, service in services.items():
        if str(service.get("image", "")).startswith("sopgym/"):
            assert service.get("init") is True, name


def test_model_server_generates_only_the_domains_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    context = parse_cli(["model-server"], {"SOPGYM_MODEL_DOMAINS": "patient_intake tod/live"})
    assert context.params["domains"] == ("patient_intake", "tod/live")


# ---- (8) per-role images ----
def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {images._canonical(d.split(">")[0].split("[")[0].split("<")[0].split("=")[0])
            for d in project["dependencies"]}  # fmt: skip


def test_each_role_installs_a_subset_of_the_projects_dependencies_as_pinned() -> None:
    pyproject = ROOT / "pyproject.toml"
    for role in images.ROLES:
        lines = images.requirements(role, pyproject)
        assert len(lines) == len(images.ROLES[role])
        assert all(line in tomllib.loads(pyproject.read_text())["project"]["dependencies"]
                   for line in lines)  # fmt: skip
    covered = {images._canonical(n) for names in images.ROLES.values() for n in names}
    # what no image needs: the RL environment API (sopgym.env), a library's entry point only
    assert _declared() - covered == {"gymnasium"}
    assert "pandas" not in images.ROLES["agents"]
    assert not {"langgraph", "langchain-core", "langchain-openai"} & set(images.ROLES["gateway"])


def test_the_requirement_files_the_images_install_are_current(tmp_path: Path) -> None:
    written = images.lock(tmp_path, ROOT / "pyproject.toml")
    for path in written:
        committed = ROOT / "compose" / "requirements" / path.name
        assert committed.read_text() == path.read_text(), (
            f"{committed} is stale: python sopgym/orchestration/images.py lock "
            "compose/requirements pyproject.toml"
        )


# import names of the dependencies a role may lack (their own top-level modules)
_MODULES = {
    "fastapi": ["fastapi"], "pandas": ["pandas"], "pillow": ["PIL"], "grpcio": ["grpc"],
    "googleapis-common-protos": ["google.rpc"], "mcp": ["mcp"], "langgraph": ["langgraph"],
    "langchain-core": ["langchain_core"], "langchain-openai": ["langchain_openai"],
    "gymnasium": ["gymnasium"],
}  # fmt: skip
_BLOCKED_RUN = r"""
import importlib.abc, sys
blocked = set(sys.argv[2].split())
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in blocked):
            raise ModuleNotFoundError(f"No module named {name!r} (not in this role's image)")
sys.meta_path.insert(0, Block())
from sopgym.orchestration import images
problems = [p for p in images.check(sys.argv[1]) if "does not import" in p]
print("\n".join(problems))
sys.exit(1 if problems else 0)
"""


@pytest.mark.parametrize("role", sorted(images.ROLES))
def test_each_role_imports_what_it_runs_without_the_dependencies_it_leaves_out(role: str) -> None:
    left_out = {images._canonical(n) for n in _MODULES} - {
        images._canonical(n) for n in images.ROLES[role]
    }
    blocked = [module for name in left_out for module in _MODULES[name]]
    result = subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN, role, " ".join(blocked)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_agents_image_is_pruned_of_everything_that_builds_gold(tmp_path: Path) -> None:
    package = tmp_path / "sopgym"
    shutil.copytree(ROOT / "domains", package / "domains")
    images.prune("agents", package)
    left = {p.relative_to(package).as_posix() for p in package.rglob("*.py")}
    assert not [p for p in left if p.endswith(("generator.py", "policy.py"))]
    assert not [p for p in left if "/tools/" in p or "/_engine/" in p]
    # the registry still lists the packs: their __init__.py and SOPs stay
    assert "domains/patient_intake/__init__.py" in left
    assert (package / "domains" / "patient_intake" / "sop.md").exists()


def test_shard_mode_names_its_domains_without_importing_their_packs() -> None:
    script = (
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.startswith('sopgym.domains.'):\n"
        "            raise ModuleNotFoundError(name + ' (pruned)')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from sopgym.cli.scaleout import domain_list\n"
        "print(domain_list(('patient_intake tod/live banking',), '--domain'))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "'patient_intake', 'tod/live', 'banking/account_management'" in result.stdout


def test_a_role_import_check_names_what_is_missing_or_must_not_be_there() -> None:
    assert images.check("gateway") == []
    problems = images.check("agents")  # in this full install, the gold builders are present
    assert any("patient_intake.generator is in the agents image" in p for p in problems)

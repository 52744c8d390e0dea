"""The scale-out manifests: the Kubernetes load test (an overlay), and the optional components
for monitoring (ServiceMonitor, PodMonitor, Grafana dashboard) and Jaeger's persistent storage,
rendered as users render them and checked against the code they deploy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import pytest
import yaml

from sopgym.agents.metrics import WorkerMetrics
from sopgym.gateway.metrics import GatewayMetrics
from sopgym.observability.metrics import Metrics
from tests.deploy_helpers import (
    COMPOSE,
    ENV_FILES,
    OPERATOR_ENV,
    ROOT,
    by_kind,
    container_env,
    deployed_k8s,
    expand,
    have,
    kustomize,
    parse_cli,
    render,
)

needs_kubectl = pytest.mark.skipif(not have("kubectl"), reason="kubectl absent (CI installs it)")
COMPONENTS = ROOT / "k8s" / "components"


def _strictly_valid(docs: list[dict]) -> list[str]:
    """Strict schema failures of the built-in kinds (CRDs such as ServiceMonitor have none)."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    failures = []
    for doc in docs:
        if doc["apiVersion"].startswith("monitoring.coreos.com/"):
            continue
        try:
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
        except kubernetes_validate.ValidationError as error:
            failures.append(f"{doc['kind']}/{doc['metadata']['name']}: {error.message}")
    return failures


@needs_kubectl
def test_the_loadtest_overlay_runs_loadtest_pods_and_gathers_every_part() -> None:
    docs = render("loadtest")
    assert not _strictly_valid(_added_or_changed(docs))
    jobs = by_kind(docs, "Job")
    assert set(jobs) == {"loadtest", "loadtest-gather"}, "the load test replaces the run"
    pods = jobs["loadtest"]["spec"]
    assert pods["completionMode"] == "Indexed" and pods["parallelism"] == pods["completions"]
    configmaps = by_kind(docs, "ConfigMap")
    for job in jobs.values():
        container = job["spec"]["template"]["spec"]["containers"][0]
        env = container_env(job, configmaps)
        parse_cli([expand(a, env) for a in container["args"]], env)
        assert job["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"]
    loadtest = pods["template"]["spec"]["containers"][0]["args"]
    gather = jobs["loadtest-gather"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert gather[gather.index("--parts") + 1] == str(pods["completions"])
    out = loadtest[loadtest.index("--out") + 1]
    assert out == f"{gather[1]}/part-$(LOADTEST_INDEX)"  # each pod its own part, one folder
    assert loadtest[loadtest.index("--gateway") + 1] == "$(GATEWAY)"  # the in-cluster gateway


@cache
def _with_components(*names: str) -> list[dict]:
    """The local overlay plus ``names`` components, as a user's overlay would list them."""
    with tempfile.TemporaryDirectory() as scratch:
        k8s = os.path.relpath(deployed_k8s(), scratch)  # kustomize takes relative paths only
        listed = ", ".join(f"{k8s}/components/{n}" for n in names)
        (Path(scratch) / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            f"resources: [{k8s}/overlays/local]\ncomponents: [{listed}]\n"
        )
        return kustomize(Path(scratch))


def _added_or_changed(docs: list[dict]) -> list[dict]:
    """What the components add or change (test_deploy.py validates the overlay itself)."""
    return [d for d in docs if d not in render("local")]


def _matches(selector: dict, labels: dict) -> bool:
    wanted = selector.get("matchLabels", {}).items() <= labels.items()
    return wanted and all(
        labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", [])
    )


@needs_kubectl
def test_monitoring_scrapes_every_gateway_replica_and_worker_pod() -> None:
    docs = _with_components("monitoring")
    assert not _strictly_valid(_added_or_changed(docs))
    (monitor,) = by_kind(docs, "ServiceMonitor").values()
    gateway = by_kind(docs, "Service")["gateway"]
    assert _matches(monitor["spec"]["selector"], gateway["metadata"]["labels"])
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in gateway["spec"]["ports"]}
    (pods,) = by_kind(docs, "PodMonitor").values()
    workers = by_kind(docs, "Job")["agent-workers"]["spec"]["template"]
    assert _matches(pods["spec"]["selector"], workers["metadata"]["labels"])
    ports = {p["name"] for p in workers["spec"]["containers"][0]["ports"]}
    assert pods["spec"]["podMetricsEndpoints"][0]["port"] in ports


@needs_kubectl
def test_the_grafana_dashboard_asks_only_for_metrics_sopgym_exports() -> None:
    docs = _with_components("monitoring")
    (board,) = [c for c in by_kind(docs, "ConfigMap").values()
                if c["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]  # fmt: skip
    dashboard = json.loads(board["data"]["sopgym.json"])
    asked = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\b(sopgym_\w+)", target["expr"])
    }
    metrics = Metrics("dashboard-check")
    GatewayMetrics(metrics)
    WorkerMetrics(metrics, "fc", "scripted")
    exported = metrics.exposition().decode()
    missing = {name for name in asked if f"# TYPE {_family(name)} " not in exported}
    assert asked and not missing, missing


def _family(series: str) -> str:
    """The metric family of a series name (histograms expose _bucket, _sum, _count)."""
    return re.sub(r"_(bucket|sum|count)$", "", series)


@needs_kubectl
def test_jaeger_can_keep_its_traces_on_a_volume() -> None:
    docs = _with_components("jaeger-storage")
    changed = _added_or_changed(docs)
    assert {d["metadata"]["name"] for d in changed} == {"jaeger", "jaeger-storage"}
    assert not _strictly_valid(changed)
    jaeger = by_kind(docs, "Deployment")["jaeger"]["spec"]
    env = {e["name"]: e["value"] for e in jaeger["template"]["spec"]["containers"][0]["env"]}
    assert env["SPAN_STORAGE_TYPE"] == "badger" and env["BADGER_EPHEMERAL"] == "false"
    (volume,) = jaeger["template"]["spec"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] in by_kind(docs, "PersistentVolumeClaim")
    assert jaeger["strategy"]["type"] == "Recreate"


@pytest.mark.skipif(not have("docker-compose"), reason="docker-compose absent (CI installs it)")
@pytest.mark.parametrize("profile", sorted(ENV_FILES))
def test_compose_validates_with_the_loadtest_profile_on(profile: str) -> None:
    result = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "--env-file", str(ENV_FILES[profile]),
         "--profile", "loadtest", "config"],
        capture_output=True, text=True, env={**os.environ, **OPERATOR_ENV},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    loadtest = yaml.safe_load(result.stdout)["services"]["loadtest"]
    command = loadtest["command"]
    assert command[command.index("--out") + 1].startswith("/runs/")  # kept after `run --rm`
    assert "runs:/runs:rw" in loadtest["volumes"]  # the named volume, not the container

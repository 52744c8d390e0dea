"""Static checks of the containers, the compose stack and the Kubernetes manifests.

No Docker engine and no cluster exist where the tests run: the compose file is validated by
Debian's docker-compose (``config -q``), the kustomize overlays are rendered by ``kubectl
kustomize`` and every rendered manifest is validated strictly against the Kubernetes schema
(kubernetes-validate). Every container command is parsed by the real sopgym CLI; the
processes themselves are started in tests/test_deploy_processes.py.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from sopgym.core.registry import domain_names as registered_names
from sopgym.core.registry import load_domain, select_domains
from tests.deploy_helpers import (
    COMPOSE,
    DOCKERFILES,
    ENV_FILES,
    KUSTOMIZE,
    OPERATOR_ENV,
    OVERLAYS,
    ROOT,
    by_kind,
    compose,
    container_env,
    deployed_k8s,
    dockerfile,
    expand,
    have,
    kustomize,
    parse_cli,
    render,
    sopgym_services,
)

# what compose and k8s deploy (no test packs): a tool service per pack with tools; the
# tool-free packs are served by the gateway itself (SOPGYM_GATEWAY_LOCAL_DOMAINS)
SHIPPED = [n for n in registered_names(extra="") if load_domain(n).all_tools()]
TOOL_FREE = [n for n in registered_names(extra="") if not load_domain(n).all_tools()]

needs_compose = pytest.mark.skipif(
    not have("docker-compose"), reason="docker-compose absent (CI installs it: apt docker-compose)"
)
needs_kubectl = pytest.mark.skipif(not have("kubectl"), reason="kubectl absent (CI installs it)")


def slug(domain: str) -> str:
    """A domain's name as a service name: a family pack ``tod/next_action`` is
    ``tod-next-action``."""
    return domain.replace("_", "-").replace("/", "-")


# ---- Dockerfiles ----
@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_dockerfile_is_small_non_root_healthchecked_and_runs_the_cli(kind: str) -> None:
    pytest.importorskip("dockerfile", reason="the dockerfile parser is absent (pip '.[test]')")
    steps = dockerfile(DOCKERFILES[kind])
    assert [v for _, v in steps["FROM"]] == [("python:3.11-slim",)], "one slim stage"
    # two layers from bind mounts (no source layer, no build tools): the role's dependencies,
    # keyed on the two files that decide them only, then sopgym itself
    (deps_flags, deps), (source_flags, source) = steps["RUN"]
    assert deps[0].endswith(f"compose/install.sh deps {kind}"), deps
    mounted = sorted(f.split("source=")[1].split(",")[0] for f in deps_flags)
    assert mounted == ["compose/install.sh", f"compose/requirements/{kind}.txt"]
    assert source[0].endswith(f"compose/install.sh source {kind}"), source
    assert list(source_flags) == ["--mount=type=bind,target=/src,rw"]
    ((_, (user,)),) = steps["USER"]
    assert user.split(":")[0].isdigit() and int(user.split(":")[0]) > 0, "numeric non-root user"
    ((_, health),) = steps["HEALTHCHECK"]
    assert health[:2] == ("CMD", "sopgym-ready"), "the bash probe: no interpreter to start"
    assert steps["ENTRYPOINT"] == [((), ("sopgym",))]
    ((_, command),) = steps["CMD"]
    # the gateway's image names its tool services in the environment (compose, k8s)
    parse_cli(list(command), {"SOPGYM_GATEWAY_SERVICES": "d=http://tools:8100"})
    port = health[2]
    ((_, exposed),) = steps["EXPOSE"]
    assert port in exposed, "the health check probes an exposed port"


def test_dockerignore_keeps_the_context_small() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "runs", "proto/gen", "tests"} <= ignored


# ---- compose ----
@needs_compose
@pytest.mark.parametrize("profile", sorted(ENV_FILES))
def test_compose_file_is_valid(profile: str) -> None:
    result = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "--env-file", str(ENV_FILES[profile]), "config",
         "-q"],
        capture_output=True, text=True, env={**os.environ, **OPERATOR_ENV},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("profile", sorted(ENV_FILES))
def test_every_compose_service_runs_a_real_cli_command(profile: str) -> None:
    document = compose(profile)
    services = sopgym_services(document)
    assert {"gateway", "agent-worker", "model", "sopgym-collector", "merge"} <= set(services)
    for name, service in services.items():
        env = {k: str(v) for k, v in (service.get("environment") or {}).items()}
        parse_cli([str(a) for a in service["command"]], env)
        dockerfile_path = ROOT / service["build"]["dockerfile"]
        assert dockerfile_path in DOCKERFILES.values(), f"{name}: no component Dockerfile"


def test_compose_serves_every_domain_through_the_gateway() -> None:
    services = compose()["services"]
    tools = {n for n, s in services.items() if str(s.get("image", "")).startswith("sopgym/tools")}
    assert tools == {f"tools-{slug(d)}" for d in SHIPPED}, (
        "compose/docker-compose.yml must serve every domain (add a tools-<domain> service)"
    )
    listed = services["gateway"]["environment"]["SOPGYM_GATEWAY_SERVICES"].split()
    assert sorted(listed) == sorted(f"{d}=http://tools-{slug(d)}:8100" for d in SHIPPED)
    for domain in SHIPPED:
        assert services[f"tools-{slug(domain)}"]["command"][:2] == ["serve-tools", domain]
    local = services["gateway"]["environment"].get("SOPGYM_GATEWAY_LOCAL_DOMAINS", "")
    assert sorted(select_domains(local.split())) == sorted(TOOL_FREE)
    assert set(services["gateway"]["depends_on"]) >= tools


def test_compose_keeps_tools_and_gold_away_from_the_agents() -> None:
    with pytest.raises(KeyError, match="SOPGYM_SERVICE_SECRET is required"):
        compose(exported={})  # no secret exported: compose refuses to start
    services = compose()["services"]
    secret = OPERATOR_ENV["SOPGYM_SERVICE_SECRET"]
    for name, service in services.items():
        env = service.get("environment") or {}
        holds_secret = name == "gateway" or name.startswith("tools-")
        assert (env.get("SOPGYM_SERVICE_SECRET") == secret) is holds_secret, name
        if name.startswith("tools-"):
            assert "ports" not in service, f"{name}: a tool service is published"
    gateway_env = services["gateway"]["environment"]
    assert gateway_env["SOPGYM_ADMIN_TOKEN"] == "", "no default admin token on a published port"
    worker = services["agent-worker"]
    assert not any(v.startswith("data:") for v in worker["volumes"]), "gold mounted for agents"


def test_compose_gpu_profile_replaces_the_scripted_model() -> None:
    scripted, gpu = compose("scripted"), compose("gpu")
    assert env_profiles("scripted") == ["scripted"] and env_profiles("gpu") == ["gpu"]
    assert scripted["services"]["model"]["profiles"] == ["scripted"]
    vllm = gpu["services"]["vllm"]
    assert vllm["profiles"] == ["gpu"] and vllm["image"].startswith("vllm/vllm-openai")
    devices = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]
    worker = gpu["services"]["agent-worker"]["command"]
    assert worker[worker.index("--base-url") + 1] == "http://vllm:8000/v1"
    assert worker[worker.index("--model") + 1].startswith("openai:")


def env_profiles(profile: str) -> list[str]:
    from tests.deploy_helpers import env_file

    return env_file(ENV_FILES[profile])["COMPOSE_PROFILES"].split(",")


def test_compose_telemetry_reaches_jaeger_and_the_receiver() -> None:
    services = compose()["services"]
    assert services["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"
    assert "16686:16686" in services["jaeger"]["ports"]
    assert "opentelemetry-collector-contrib" in services["otel-collector"]["image"]
    config = yaml.safe_load((ROOT / "k8s" / "base" / "otel-collector.yaml").read_text())
    exporters = config["exporters"]
    assert exporters["otlp/jaeger"]["endpoint"].startswith("jaeger:")
    assert "//sopgym-collector:4318" in exporters["otlphttp/sopgym"]["endpoint"]
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            assert set(pipeline[kind]) <= set(config[kind]), f"undefined {kind}"
    assert config["service"]["pipelines"]["traces"]["exporters"] == [
        "otlp/jaeger",
        "otlphttp/sopgym",
    ]


# ---- Kubernetes ----
@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict]]:
    if not have("kubectl"):
        pytest.skip("kubectl absent: cannot render the kustomize overlays (CI installs it)")
    return request.param, render(request.param)


def test_rendered_manifests_pass_strict_schema_validation(overlay: tuple[str, list[dict]]) -> None:
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate absent (pip install '.[test]')"
    )
    name, docs = overlay
    failures = []
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
        except kubernetes_validate.ValidationError as error:
            failures.append(f"{doc['kind']}/{doc['metadata']['name']}: {error.message}")
    assert not failures, f"{name}: " + "; ".join(failures)


def test_strict_validation_rejects_an_unknown_field() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    bad = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "x"},
        "spec": {"portz": []},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, kubernetes_validate.latest_version(), strict=True)


def test_every_sopgym_container_runs_a_real_cli_command(overlay: tuple[str, list[dict]]) -> None:
    _, docs = overlay
    configmaps = by_kind(docs, "ConfigMap")
    workloads = [d for d in docs if d["kind"] in ("Deployment", "Job")]
    ours = 0
    for doc in workloads:
        container = doc["spec"]["template"]["spec"]["containers"][0]
        if "sopgym/" not in container["image"]:
            continue
        ours += 1
        env = container_env(doc, configmaps)
        args = [expand(a, env) for a in container["args"]]
        parse_cli(args, env)
        security = doc["spec"]["template"]["spec"]["securityContext"]
        assert security["runAsNonRoot"] and security["runAsUser"] > 0
        assert container["securityContext"]["readOnlyRootFilesystem"]
        assert container["resources"]["requests"], f"{doc['metadata']['name']}: no requests"
    assert ours >= len(SHIPPED) + 4  # + gateway, collector, workers, merge


def test_tool_services_and_gateway_are_probed_and_the_gateway_scales(
    overlay: tuple[str, list[dict]],
) -> None:
    _, docs = overlay
    deployments, services = by_kind(docs, "Deployment"), by_kind(docs, "Service")
    gateway_env = by_kind(docs, "ConfigMap")
    listed = next(
        cm["data"]["SOPGYM_GATEWAY_SERVICES"].split()
        for name, cm in gateway_env.items()
        if name.startswith("sopgym-gateway")
    )
    assert sorted(listed) == sorted(f"{d}=http://tools-{slug(d)}:8100" for d in SHIPPED)
    local = next(
        cm["data"].get("SOPGYM_GATEWAY_LOCAL_DOMAINS", "")
        for name, cm in gateway_env.items()
        if name.startswith("sopgym-gateway")
    )
    assert sorted(select_domains(local.split())) == sorted(TOOL_FREE)
    for name in [f"tools-{slug(d)}" for d in SHIPPED] + ["gateway"]:
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        assert container["readinessProbe"] and container["livenessProbe"], name
        assert name in services, f"no Service for {name}"
    tools = deployments["tools-patient-intake"]["spec"]["template"]["spec"]["containers"][0]
    assert tools["args"][:2] == ["serve-tools", "patient_intake"]
    (hpa,) = by_kind(docs, "HorizontalPodAutoscaler").values()
    assert hpa["spec"]["scaleTargetRef"]["name"] == "gateway"
    # episode affinity without client IP: each replica advertises its own pod address
    assert "sessionAffinity" not in services["gateway"]["spec"]
    gateway = deployments["gateway"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in gateway["env"]}
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert list(env).index("POD_IP") < list(env).index("SOPGYM_GATEWAY_ADVERTISE_URL")
    assert env["SOPGYM_GATEWAY_ADVERTISE_URL"]["value"] == "http://$(POD_IP):8000"
    assert env["SOPGYM_GATEWAY_ADVERTISE_GRPC"]["value"] == "$(POD_IP):50051"
    budgets = {n: b["spec"] for n, b in by_kind(docs, "PodDisruptionBudget").items()}
    assert budgets["gateway"]["maxUnavailable"] == 1
    for name in [f"tools-{slug(d)}" for d in SHIPPED]:
        assert budgets[name]["minAvailable"] == 1, name
    for name, budget in budgets.items():  # each covers its own Deployment's pods, no other's
        covered = [
            n for n, d in deployments.items()
            if budget["selector"]["matchLabels"].items()
            <= d["spec"]["template"]["metadata"]["labels"].items()
        ]  # fmt: skip
        assert covered == [name], (name, covered)
    assert (
        "prometheus.io/scrape"
        in deployments["gateway"]["spec"]["template"]["metadata"]["annotations"]
    )


def test_only_the_gateway_may_reach_the_tool_services(overlay: tuple[str, list[dict]]) -> None:
    _, docs = overlay
    policy = by_kind(docs, "NetworkPolicy")["tools-from-gateway-only"]
    selected = policy["spec"]["podSelector"]["matchLabels"]
    (rule,) = policy["spec"]["ingress"]
    (source,) = rule["from"]
    deployments = by_kind(docs, "Deployment")
    for name, deployment in deployments.items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        chosen = all(labels.get(k) == v for k, v in selected.items())
        assert chosen is name.startswith("tools-"), name
        allowed = all(labels.get(k) == v for k, v in source["podSelector"]["matchLabels"].items())
        assert allowed is (name == "gateway"), name
    for name in ["gateway", *(f"tools-{slug(d)}" for d in SHIPPED)]:
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        assert "SOPGYM_SERVICE_SECRET" in {e["name"] for e in container["env"]}, name


def test_agent_workers_lease_their_tasks_in_a_plain_parallel_job(
    overlay: tuple[str, list[dict]],
) -> None:
    """Issue 42: the workers lease tasks from the run service (no fixed shards), the Job uses
    podFailurePolicy for the worker's exit statuses, and no pod but the run service's mounts
    the runs volume, which is ReadWriteOnce."""
    from sopgym.orchestration.leases import EXIT_INFRA, EXIT_USAGE

    _, docs = overlay
    jobs, configmaps = by_kind(docs, "Job"), by_kind(docs, "ConfigMap")
    workers = jobs["agent-workers"]["spec"]
    assert "completionMode" not in workers and "completions" not in workers, "a work queue"
    pod = workers["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # podFailurePolicy requires it
    rules = workers["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    by_action = {r["action"]: r["onExitCodes"] for r in rules[1:]}
    assert by_action["FailJob"] == {"containerName": "agent-worker", "operator": "In",
                                    "values": [EXIT_USAGE]}  # fmt: skip
    assert by_action["Count"]["values"] == [EXIT_INFRA]
    assert workers["backoffLimit"] >= 1
    container = pod["containers"][0]
    env = container_env(jobs["agent-workers"], configmaps)
    args = [expand(a, env) for a in container["args"]]
    assert args[args.index("--leases") + 1] == "http://run-service:8400"
    assert int(args[args.index("--concurrency") + 1]) > 1, "a pod holds many episodes"
    assert "--shard" not in args
    merge = jobs["merge"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [expand(a, env) for a in merge[:2]] == ["merge-leases", "http://run-service:8400"]
    claims = by_kind(docs, "PersistentVolumeClaim")
    assert all("ReadWriteMany" not in c["spec"]["accessModes"] for c in claims.values())
    assert claims["sopgym-runs"]["spec"]["accessModes"] == ["ReadWriteOnce"]
    mounting = [
        f"{d['kind']}/{d['metadata']['name']}"
        for d in docs
        if d["kind"] in ("Deployment", "Job")
        and any(v.get("persistentVolumeClaim", {}).get("claimName") == "sopgym-runs"
                for v in d["spec"]["template"]["spec"].get("volumes", []))
    ]  # fmt: skip
    assert mounting == ["Deployment/run-service"], mounting
    service = by_kind(docs, "Deployment")["run-service"]
    assert service["spec"]["replicas"] == 1 and service["spec"]["strategy"]["type"] == "Recreate"
    run_pod = service["spec"]["template"]["spec"]
    assert [c["name"] for c in run_pod["containers"]] == ["run-service", "collector"]
    collector = by_kind(docs, "Service")["sopgym-collector"]["spec"]
    assert collector["selector"] == service["spec"]["selector"]["matchLabels"]
    assert collector["ports"][0]["targetPort"] in {p.get("name") for p in
                                                   run_pod["containers"][1]["ports"]}  # fmt: skip
    parse_cli([expand(a, env) for a in run_pod["containers"][1]["args"]], env)
    assert by_kind(docs, "Secret"), "API keys live in a Secret"
    assert {"jaeger", "otel-collector", "run-service"} <= set(by_kind(docs, "Deployment"))


@needs_kubectl
def test_the_kueue_component_queues_the_agents_job_suspended() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    copy = deployed_k8s()
    overlay = copy / "overlays" / "with-kueue"
    overlay.mkdir(exist_ok=True)
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [../local]\ncomponents: [../../components/kueue]\n"
    )
    docs = kustomize(overlay)
    jobs = by_kind(docs, "Job")
    workers = jobs["agent-workers"]
    assert workers["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "sopgym"
    assert workers["spec"]["suspend"] is True
    assert "suspend" not in by_kind(render("local"), "Job")["agent-workers"]["spec"]
    kubernetes_validate.validate(workers, kubernetes_validate.latest_version(), strict=True)


def test_gpu_overlay_serves_vllm_on_a_gpu_instead_of_the_scripted_model() -> None:
    if not have("kubectl"):
        pytest.skip("kubectl absent: cannot render the kustomize overlays (CI installs it)")
    local, gpu = by_kind(render("local"), "Deployment"), by_kind(render("gpu"), "Deployment")
    assert "model" in local and "vllm" not in local
    assert "model" not in gpu
    vllm = gpu["vllm"]["spec"]["template"]["spec"]["containers"][0]
    assert vllm["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "$(VLLM_MODEL)" in vllm["args"]
    run = next(cm for n, cm in by_kind(render("gpu"), "ConfigMap").items()
               if n.startswith("sopgym-run"))  # fmt: skip
    assert run["data"]["MODEL_URL"] == "http://vllm:8000/v1"
    assert run["data"]["MODEL"].startswith("openai:")
    # the workers outwait vLLM's start-up (weights download) instead of failing the Job
    startup = vllm["startupProbe"]
    workers = by_kind(render("gpu"), "Job")["agent-workers"]["spec"]["template"]["spec"]
    args = workers["containers"][0]["args"]
    assert args[args.index("--wait") + 1] == "$(MODEL_WAIT_S)"
    assert int(run["data"]["MODEL_WAIT_S"]) > startup["periodSeconds"] * startup["failureThreshold"]


@needs_kubectl
def test_base_builds_too() -> None:
    result = subprocess.run([*KUSTOMIZE, str(ROOT / "k8s" / "base")], capture_output=True)
    assert result.returncode == 0, result.stderr.decode()

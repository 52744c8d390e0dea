"""Every sopgym service of compose/docker-compose.yml, started as the process its container
would run: the same command, with compose's hostnames and ports moved onto 127.0.0.1.

One domain's tool service, the gateway (HTTP and gRPC), the scripted model, sopgym's trace
receiver, the run service, two agent workers holding many episodes each on leases
(``--leases``, ``--concurrency``) and the merge step run a small suite end to end; the
OpenTelemetry Collector and Jaeger (third-party images) are left out, so the processes export
straight to the receiver.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command
from tests.deploy_helpers import compose, sopgym_services
from tests.helpers import DATA_ROOT

DOMAIN = "patient_intake"
LIMIT = 6  # tasks of the suite
SERVICES = ("sopgym-collector", "tools-patient-intake", "model", "gateway")
HOST_URL = r"http://([\w-]+):(\d+)"  # a compose service's URL


class Localizer:
    """Moves compose commands onto loopback: a free port per service, ``/runs`` under tmp."""

    def __init__(self, runs: Path) -> None:
        self.runs = runs
        self.ports: dict[tuple[str, str], int] = {}

    def port(self, service: str, internal: str) -> int:
        return self.ports.setdefault((service, internal), free_port())

    def url(self, match: re.Match[str]) -> str:
        service, port = match.group(1), match.group(2)
        return f"http://127.0.0.1:{self.port(service, port)}"

    def args(self, service: str, command: list[str]) -> list[str]:
        out, previous = [], ""
        for arg in map(str, command):
            if previous in ("--port", "--grpc-port", "--metrics-port"):
                arg = str(self.port(service, arg))
            arg = arg.replace("0.0.0.0", "127.0.0.1")
            arg = re.sub(HOST_URL, self.url, arg)
            out.append(arg.replace("/runs/", f"{self.runs}/"))
            previous = arg
        return out

    def env(self, environment: dict) -> dict[str, str]:
        env = {k: re.sub(HOST_URL, self.url, str(v)) for k, v in environment.items()}
        env["SOPGYM_DATA"] = str(DATA_ROOT)
        # no OTel Collector here: export straight to sopgym's receiver
        receiver = f"http://127.0.0.1:{self.port('sopgym-collector', '4318')}"
        if "OTEL_EXPORTER_OTLP_ENDPOINT" in env:
            env.update(OTEL_EXPORTER_OTLP_ENDPOINT=receiver, OTEL_BSP_SCHEDULE_DELAY="200",
                       OTEL_METRICS_EXPORTER="none")  # fmt: skip
        return env


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict, Localizer]]:
    root = tmp_path_factory.mktemp("compose")
    services = sopgym_services(compose())
    local = Localizer(root / "runs")
    run_id = "compose"
    with ProcessGroup() as group:
        for name in SERVICES:
            service = services[name]
            env = local.env(service.get("environment") or {})
            args = local.args(name, service["command"])
            if name == "gateway":  # only the domain this test serves
                env["SOPGYM_GATEWAY_SERVICES"] = (
                    f"{DOMAIN}=http://127.0.0.1:{local.port('tools-patient-intake', '8100')}"
                )
            if name == "model":  # the image knows every domain; this test needs one
                args += ["--domain", DOMAIN, "--data-root", str(DATA_ROOT)]
            port = args[args.index("--port") + 1]  # localized already
            group.start(name, sopgym_command(*args), root / f"{name}.log", env=env,
                        ready_url=f"http://127.0.0.1:{port}/readyz").wait_ready(120)  # fmt: skip
        service = services["run-service"]
        args = [*local.args("run-service", service["command"]), "--limit", str(LIMIT),
                "--data-root", str(DATA_ROOT)]  # fmt: skip
        env = local.env({**service["environment"], "SOPGYM_DOMAINS": DOMAIN})
        port = args[args.index("--port") + 1]
        group.start("run-service", sopgym_command(*args), root / "run-service.log", env=env,
                    ready_url=f"http://127.0.0.1:{port}/readyz").wait_ready(180)  # fmt: skip
        worker = services["agent-worker"]
        replicas = int(worker["deploy"]["replicas"])  # compose/.env's WORKERS
        workers = []
        for index in range(replicas):
            env = local.env({**worker["environment"], "SOPGYM_WORKER_ID": f"worker-{index}"})
            args = [*local.args(f"agent-worker-{index}", worker["command"]), "--wait", "60"]
            workers.append(group.start(f"worker-{index}", sopgym_command(*args),
                                       root / f"worker-{index}.log", env=env))  # fmt: skip
        deadline = time.monotonic() + 240
        for child in workers:
            child.popen.wait(max(1.0, deadline - time.monotonic()))
            assert child.popen.returncode == 0, child.log_tail()
        merge = services["merge"]
        args = local.args("merge", merge["command"])
        args[args.index("--wait") + 1] = "60"
        env = local.env(merge.get("environment") or {})
        result = subprocess.run(sopgym_command(*args), capture_output=True, text=True,
                                env={**os.environ, **env}, timeout=300)  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        concurrency = worker["command"][worker["command"].index("--concurrency") + 1]
        gateway_port = local.port("gateway", "8000")
        metrics = httpx.get(f"http://127.0.0.1:{gateway_port}/metrics").text
        facts = {"metrics": metrics, "workers": replicas, "concurrency": concurrency}
        yield root / "runs" / run_id, facts, local


def test_lease_workers_and_merge_make_one_scored_run(suite: tuple[Path, dict, Localizer]):
    """The workers hold many episodes each (compose's EPISODES_PER_WORKER) and share the run's
    tasks through the run service; the merge writes one scored run."""
    run, facts, _ = suite
    assert facts["concurrency"] == "16" and facts["workers"] == 2  # compose/.env's figures
    summary = orjson.loads((run / "summary.json").read_bytes())
    assert summary["tasks"] == LIMIT and summary["tsr"] == 1.0, summary
    rows = [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]
    assert len({r["task_id"] for r in rows}) == LIMIT
    assert all(r["trajectory"]["calls"] and r["llm_calls"] for r in rows)


def test_traces_reach_the_receiver_and_the_report_is_written(
    suite: tuple[Path, dict, Localizer],
) -> None:
    run, _, _ = suite
    assert list((run / "traces").glob("*.jsonl")), "the receiver stored the run's spans"
    assert (run / "report.md").exists() and (run / "report.html").exists()
    evaluation = orjson.loads((run / "eval.json").read_bytes())
    assert evaluation["tsr"] == 1.0, "scored from traces alone, the run agrees"


def test_the_gateway_exposes_prometheus_metrics(suite: tuple[Path, dict, Localizer]) -> None:
    _, facts, _ = suite
    metrics = facts["metrics"]
    assert "# TYPE sopgym_gateway_tool_calls_total counter" in metrics
    assert 'sopgym_gateway_episodes_finished_total{domain="patient_intake",transport="http"}' \
        in metrics  # fmt: skip
    assert "sopgym_gateway_tool_call_duration_seconds_bucket" in metrics

"""``sopgym loadtest``, the metrics it shares with the agent workers and the gateway, and the
shard bookkeeping behind the containerised workers."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest

from sopgym.agents.metrics import WorkerMetrics, episode_facts, tool_error_class
from sopgym.observability.metrics import Metrics, serve_metrics
from sopgym.orchestration.dispatch import SharedWorker
from sopgym.orchestration.loadtest import (
    JobFeed,
    Loadtest,
    LoadtestConfig,
    LoadtestError,
    Outcome,
    Stats,
    percentiles,
    write_reports,
)
from sopgym.orchestration.processes import ManagedProcess, free_port
from sopgym.orchestration.shards import ShardError, claim, merge, parse_shard
from sopgym.runs.records import WorkerReport
from tests.helpers import DATA_ROOT

REPORT = {
    "task_id": "T1",
    "domain": "patient_intake",
    "status": "finished",
    "elapsed_s": 1.5,
    "llm_calls": [
        {"latency_s": 0.2, "input_tokens": 100, "output_tokens": 10, "error": None},
        {"latency_s": 0.4, "input_tokens": 120, "output_tokens": 5,
         "error": "APITimeoutError: too slow"},
    ],
}  # fmt: skip
RECORD = {
    "calls": [
        {"name": "a", "duration_ms": 2.0, "error_code": None},
        {"name": "b", "duration_ms": 4.0, "error_code": "type_mismatch"},
        {"name": "c", "duration_ms": 1.0, "error_code": "unknown_tool", "in_catalog": False},
        {"name": "d", "duration_ms": 3.0, "error_code": "missing_argument"},
    ]
}


def report(**changes: object) -> WorkerReport:
    """REPORT as the runner reads a worker's line, with ``changes``."""
    return WorkerReport.from_json({**REPORT, **changes})


def test_episode_facts_read_reports_and_records() -> None:
    facts = episode_facts(report(), RECORD)
    assert (facts.domain, facts.status, facts.error, facts.elapsed_s) == (
        "patient_intake", "finished", None, 1.5
    )  # fmt: skip
    assert [c.error for c in facts.llm] == [None, "APITimeoutError"]
    assert [c.error for c in facts.tools] == [None, "type", "hallucinated", "validation"]
    failed = episode_facts(report(status="failed", error="ModelCallError: boom"))
    assert failed.error == "ModelCallError" and failed.tools == []
    assert tool_error_class("upstream_unavailable") == "upstream_unavailable"


def test_figures_rates_and_percentiles() -> None:
    assert percentiles([])["p50"] is None
    values = [float(i) for i in range(1, 101)]
    # one percentile definition for every figure (sopgym.evaluation.stats.quantile): the
    # value at index round(q * (n - 1)), ties to even; index 50 of 100 for the median
    assert percentiles(values) | {"n": 100} == {
        "n": 100, "p50": 51.0, "p95": 95.0, "p99": 99.0, "mean": 50.5, "max": 100.0
    }  # fmt: skip
    stats = Stats()
    stats.started = time.monotonic() - 2.0
    stats.add(episode_facts(report(), RECORD))
    stats.add(episode_facts(report(status="failed", error="DeadlineExceeded: t")))
    figures = stats.figures(now=stats.started + 2.0)
    assert figures["episodes"] == 2 and figures["finished"] == 1
    assert figures["episodes_per_s"] == 1.0 and figures["tool_calls_per_s"] == 2.0
    assert figures["llm_calls"] == 4 and figures["tokens"]["total"] == 2 * 235
    assert figures["tokens_per_s"] == 235.0
    # of 1, 2, 3, 4 ms: index round(1.5) = 2 (the one percentile definition)
    assert figures["tool_latency_ms"]["p50"] == 3.0 and figures["llm_latency_ms"]["max"] == 400.0
    assert figures["error_rates"]["episodes"] == {"DeadlineExceeded": 0.5}
    assert figures["error_rates"]["tool_calls"] == {
        "hallucinated": 0.25, "type": 0.25, "validation": 0.25
    }  # fmt: skip
    assert figures["error_rates"]["llm_calls"] == {"APITimeoutError": 0.5}


def test_job_feed_cycles_the_tasks_up_to_the_limit_and_stops() -> None:
    tasks = [{"id": "a", "domain": "d"}, {"id": "b", "domain": "d"}]
    feed = JobFeed(tasks, 5, {("d", "a"): {"calls": []}})
    jobs = [feed.next() for _ in range(6)]
    assert [j["task"]["id"] for j in jobs[:5] if j] == ["a", "b", "a", "b", "a"] and jobs[5] is None
    assert jobs[0] is not None and jobs[0]["replay"] == {"calls": []}
    assert jobs[1] is not None and jobs[1].get("replay") is None  # no replay for task b
    stopped = JobFeed(tasks, 100, {})
    stopped.stop()
    assert stopped.next() is None


# Stand-ins for agent workers (the JSON-lines protocol on stdin/stdout, nothing else): one
# answers every job with a failed episode, one dies before answering.
FAILING_WORKER = """
import json, sys
for line in sys.stdin:
    job = json.loads(line)
    task = job["task"]
    print(json.dumps({"task_id": task["id"], "domain": task["domain"], "status": "failed",
                      "error": "ModelCallError: scripted: boom", "elapsed_s": 0.01,
                      "job_id": job["job_id"]}), flush=True)
"""
DYING_WORKER = "import sys; print('cannot start', file=sys.stderr); sys.exit(3)"


def stand_in_worker(tmp_path: Path, name: str, source: str) -> SharedWorker:
    argv = [sys.executable, "-c", source]
    return SharedWorker(ManagedProcess(name, argv, tmp_path / f"{name}.log", pipes=True))


def test_a_worker_that_dies_in_its_warm_up_stops_the_loadtest_with_its_log(
    tmp_path: Path,
) -> None:
    worker = stand_in_worker(tmp_path, "w0", DYING_WORKER)
    loadtest = Loadtest(LoadtestConfig(task_timeout=5.0, grace=1.0), tmp_path)
    tasks = [{"id": "T1", "domain": "patient_intake"}]
    try:
        with pytest.raises(LoadtestError, match=r"(?s)w0 did not finish.*code 3.*cannot start"):
            loadtest._warm_up([worker], tasks, {}, None, Stats())
    finally:
        worker.stop()


def test_failed_episodes_are_counted_with_their_reasons_in_every_report(tmp_path: Path) -> None:
    workers = [stand_in_worker(tmp_path, f"w{i}", FAILING_WORKER) for i in range(2)]
    config = LoadtestConfig(tasks=5, concurrency=2, duration=30.0, grace=5.0)
    loadtest, stats = Loadtest(config, tmp_path), Stats()
    timeline: list[tuple[float, int]] = []
    tasks = [{"id": f"T{i}", "domain": "patient_intake"} for i in range(3)]
    try:
        cut = loadtest._phase(workers, workers, JobFeed(tasks, 5, {}), None, stats, None,
                              timeline)  # fmt: skip
    finally:
        for worker in workers:
            worker.stop()
    figures = stats.figures()
    assert cut == 0 and figures["episodes"] == 5 and figures["finished"] == 0
    assert figures["error_rates"]["episodes"] == {"ModelCallError": 1.0}
    assert sorted(f["task_id"] for f in stats.failures) == ["T0", "T0", "T1", "T1", "T2"]
    assert {f["error"] for f in stats.failures} == {"ModelCallError: scripted: boom"}
    report = Outcome(  # the reports show the reasons, not just the rates
        {"concurrency": 2, "agent": "fc", "model": "scripted"},
        figures, Stats().figures(), cut, timeline, stats.failures,
    )  # fmt: skip
    write_reports(report, tmp_path)
    assert "scripted: boom" in (tmp_path / "loadtest.md").read_text()
    assert "scripted: boom" in (tmp_path / "loadtest.html").read_text()
    assert orjson.loads((tmp_path / "loadtest.json").read_bytes())["failures"][0]["worker"]


def test_prometheus_exposition_and_scrape_endpoint() -> None:
    metrics = Metrics("test", otel=False)
    workers = WorkerMetrics(metrics, "fc", "scripted")
    workers.observe(episode_facts(report(), RECORD))
    text = metrics.exposition().decode()
    assert "# TYPE sopgym_agent_episodes_total counter" in text
    assert 'sopgym_agent_episodes_total{domain="patient_intake",agent="fc",status="ok"} 1' in text
    assert 'sopgym_agent_llm_tokens_total{model="scripted",type="input"} 220' in text
    assert 'sopgym_agent_llm_calls_total{model="scripted",outcome="APITimeoutError"} 1' in text
    assert 'sopgym_agent_tool_calls_total{domain="patient_intake",outcome="type"} 1' in text
    bucket = 'sopgym_agent_llm_call_duration_seconds_bucket{model="scripted",le="0.25"} 1'
    assert bucket in text
    assert 'sopgym_agent_llm_call_duration_seconds_bucket{model="scripted",le="+Inf"} 2' in text
    assert 'sopgym_agent_llm_call_duration_seconds_count{model="scripted"} 2' in text
    escaped = Metrics("test", otel=False)
    escaped.counter("odd", "Odd labels.", ("v",)).add(('say "hi"\\',))
    assert 'odd_total{v="say \\"hi\\"\\\\"} 1' in escaped.exposition().decode()
    port = free_port()
    server = serve_metrics(metrics, "127.0.0.1", port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as response:
            assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
            assert response.read().decode() == text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200
    finally:
        server.shutdown()


def test_metrics_mirror_to_opentelemetry_when_exported() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        HistogramDataPoint,
        InMemoryMetricReader,
        NumberDataPoint,
    )

    reader = InMemoryMetricReader()
    metrics = Metrics("test", otel=False)
    metrics._meter = MeterProvider(metric_readers=[reader]).get_meter("t")
    metrics.counter("calls", "Calls.", ("outcome",)).add(("ok",), 3)
    metrics.histogram("latency_seconds", "Latency.").observe(0.01)
    data = reader.get_metrics_data()
    assert data is not None
    exported = {
        m.name: m.data.data_points[0]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    calls, latency = exported["calls"], exported["latency_seconds"]
    assert isinstance(calls, NumberDataPoint) and isinstance(latency, HistogramDataPoint)
    assert calls.value == 3 and dict(calls.attributes or {}) == {"outcome": "ok"}
    assert latency.count == 1


def test_shards_parse_claim_and_refuse_to_merge_disagreeing_runs(tmp_path: Path) -> None:
    assert parse_shard("3/8") == (3, 8) and parse_shard("auto/4") == (None, 4)
    for bad in ("8/8", "x/2", "1", "0/0"):
        with pytest.raises(ShardError):
            parse_shard(bad)
    first, second = claim(tmp_path, 2, "host-a:1"), claim(tmp_path, 2, "host-b:1")
    assert first is not None and second is not None
    assert (first.index, second.index) == (0, 1)
    assert claim(tmp_path, 2, "host-c:1") is None, "every shard is taken"
    again = claim(tmp_path, 2, "host-b:1")
    assert again is not None and again.index == 1, "a restarted owner gets its shard back"
    shards = tmp_path / "shards"
    for index, agent in ((0, "fc"), (1, "react")):
        meta = {"domains": ["patient_intake"], "agent": agent, "model": "scripted", "count": 2,
                "shard": index, "distractors": 0, "sop_variant": "clean", "limit": None,
                "finished_at": 1.0}  # fmt: skip
        (shards / f"shard-{index:04d}-of-0002.json").write_bytes(orjson.dumps(meta))
    with pytest.raises(ShardError, match="disagree on agent"):
        merge(tmp_path, data_root=DATA_ROOT)


def loadtest(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "lt"
    command = [sys.executable, "-m", "sopgym", "loadtest", "--out", str(out),
               "--data-root", str(DATA_ROOT), *args]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = orjson.loads((out / "loadtest.json").read_bytes())
    outcome["wall_s"] = time.monotonic() - started
    outcome["stderr"] = result.stderr
    assert (out / "loadtest.md").exists() and (out / "loadtest.html").exists()
    return outcome


def test_loadtest_on_the_embedded_stack_is_bounded_and_reports_figures(tmp_path: Path) -> None:
    """Far more episodes than the duration allows: it stops on time, over gRPC agents."""
    outcome = loadtest(tmp_path, "--tasks", "100000", "--concurrency", "2", "--duration", "4",
                       "--grace", "20", "--transport", "grpc")  # fmt: skip
    figures = outcome["figures"]
    assert 0 < figures["episodes"] < 100000
    assert figures["finished"] == figures["episodes"], outcome["failures"]
    assert figures["elapsed_s"] < 4 + 20
    assert figures["tool_calls"] > 0 and figures["llm_calls"] > 0 and figures["tokens"]["total"]
    for block in ("tool_latency_ms", "llm_latency_ms"):
        assert figures[block]["p50"] <= figures[block]["p95"] <= figures[block]["p99"]
    assert outcome["warmup"]["episodes"] == 2, "one warm-up episode per worker, left out"
    assert "episodes/s" in outcome["stderr"] and "tool-call latency" in outcome["stderr"]

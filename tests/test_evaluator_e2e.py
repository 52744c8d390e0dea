"""Two independent paths, one answer: on real runs through real processes, the evaluator's
per-task scores computed from the trace store equal the scores computed from the gateway's own
episode records, task by task, for a clean oracle run and for deliberately bad calls."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from click.testing import CliRunner
from google.protobuf import json_format
from opentelemetry.propagate import inject
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from sopgym.agents.base import AgentContext
from sopgym.agents.worker import run_job
from sopgym.cli import main as cli
from sopgym.client import Episode, GatewayClient
from sopgym.core.tasks import Task
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.evaluator import TaskSet, evaluate, evaluate_path
from sopgym.evaluation.report import tables
from sopgym.evaluation.scoring import score_episode
from sopgym.evaluation.sources import load_spans, trace_files
from sopgym.observability import otlp, tracing
from sopgym.observability import semconv as sc
from sopgym.orchestration.stack import embedded_stack
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"
TASKS = 12


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", DOMAIN, "--agent", "oracle", "--limit",
         str(TASKS), "--runs-dir", str(runs), "--run-id", "oracle", "--data-root", str(DATA_ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return runs / "oracle"


# A scripted model that makes every kind of mistake, so the scores compared below differ
NOISY = (
    "scripted:wrong_tool=0.15,missing_arg=0.1,bad_type=0.1,wrong_value=0.1,skip_step=0.1,"
    "hallucinated_tool=0.1,blank=0.08,wrong_final=0.2,messy_format=0.5,seed=4"
)


@pytest.fixture(scope="module")
def noisy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", DOMAIN, "--agent", "react", "--model", NOISY,
         "--limit", str(TASKS), "--runs-dir", str(runs), "--run-id", "noisy", "--data-root",
         str(DATA_ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return runs / "noisy"


def _results(run: Path) -> dict[str, dict[str, Any]]:
    rows = [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]
    return {r["task_id"]: r for r in rows}


def test_oracle_scores_from_traces_equal_the_records(oracle_run: Path) -> None:
    result = evaluate_path(oracle_run, DATA_ROOT)
    records = _results(oracle_run)
    assert len(result["per_task"]) == len(records) == TASKS
    for row in result["per_task"]:
        assert row["score"] == records[row["task_id"]]["score"], row["task_id"]
        assert row["score"]["success"] and row["trace_complete"]
        assert row["score"]["order_violations"] == 0
    assert result["tsr"] == result["ecr"] == 1.0 and result["errors"] == {}
    assert not result["incomplete"] and not result["unmatched"] and not result["superseded"]


def test_one_episode_is_one_trace_of_nested_spans(oracle_run: Path) -> None:
    spans = load_spans(oracle_run).spans
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if s.attributes.get(sc.GEN_AI_OPERATION) == sc.OP_INVOKE_AGENT]
    assert len(roots) == TASKS and len({r.trace_id for r in roots}) == TASKS
    gold = domain_data(DOMAIN).gold
    for root in roots:
        task_id = root.attributes[sc.TASK_ID]
        assert root.service == "sopgym-agent-worker"
        task = by_id[root.parent_id]  # the runner's task span is the trace's root
        assert task.service == "sopgym-runner" and task.parent_id == ""
        assert root.attributes[sc.DOMAIN] == DOMAIN and root.attributes[sc.RUN_ID] == "oracle"
        assert root.attributes[sc.GEN_AI_AGENT_NAME] == "oracle"
        in_trace = [s for s in spans if s.trace_id == root.trace_id]
        tools = [s for s in in_trace if s.attributes.get(sc.GEN_AI_OPERATION) == sc.OP_EXECUTE_TOOL]
        assert [
            t.attributes[sc.GEN_AI_TOOL_NAME] for t in sorted(tools, key=lambda s: s.start_ns)
        ] == [c.name for c in gold[task_id].calls]
        for tool in tools:
            assert by_id[tool.parent_id] is root and tool.attributes[sc.GEN_AI_TOOL_CALL_ID]
            assert sc.GEN_AI_TOOL_CALL_ARGUMENTS in tool.attributes
            (server,) = [s for s in in_trace if s.parent_id == tool.span_id]
            assert server.service == "sopgym-gateway" and server.kind == 2  # SERVER
            assert server.attributes[sc.GATEWAY_OP] == sc.OP_CALL
            (service,) = [s for s in in_trace if s.parent_id == server.span_id]
            assert service.service == "sopgym-tools" and service.name == "POST /v1/tools/{name}"
        ops = {s.attributes.get(sc.GATEWAY_OP) for s in in_trace if s.service == "sopgym-gateway"}
        assert {sc.OP_OPEN, sc.OP_CALL, sc.OP_FINISH} <= ops
        assert all(s.parent_id in by_id for s in in_trace if s is not task)  # nothing orphaned


def test_trace_store_is_otlp_json_lines(oracle_run: Path) -> None:
    files = trace_files(oracle_run)
    assert files and all(f.parent.name == "traces" for f in files)
    lines = [line for f in files for line in f.read_bytes().splitlines()]
    total = 0
    for line in lines:
        document = otlp._rewrite_ids(orjson.loads(line), otlp._hex_to_b64)
        data = json_format.Parse(orjson.dumps(document), TracesData())
        total += sum(len(ss.spans) for r in data.resource_spans for ss in r.scope_spans)
    assert total == load_spans(oracle_run).total > TASKS * 10


def test_eval_and_report_commands(oracle_run: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", str(oracle_run), "--data-root", str(DATA_ROOT)])
    assert result.exit_code == 0, result.output
    saved = orjson.loads((oracle_run / "eval.json").read_bytes())
    assert saved["tasks"] == TASKS and saved["tsr"] == 1.0
    result = runner.invoke(cli, ["report", str(oracle_run), "--data-root", str(DATA_ROOT)])
    assert result.exit_code == 0, result.output
    html = (oracle_run / "report.html").read_text()
    markdown = (oracle_run / "report.md").read_text()
    some_trace = saved["per_task"][0]["trace_id"]
    # no Jaeger was named: the trace ids are plain text, never links to a Jaeger nobody runs
    assert some_trace in html and some_trace in markdown and "/trace/" not in html
    assert html.count("<svg") == 3 and "<script" not in html and "http-equiv" not in html
    result = runner.invoke(cli, ["report", str(oracle_run), "--data-root", str(DATA_ROOT),
                                 "--jaeger-ui", "http://localhost:16686"])  # fmt: skip
    assert result.exit_code == 0, result.output
    html = (oracle_run / "report.html").read_text()
    assert f"http://localhost:16686/trace/{some_trace}" in html


# ---- deliberately bad calls, through the real gateway and tool service ----
class BadAgent:
    """Makes one of each mistake the evaluator must classify, then answers (or gives up)."""

    name = "bad"

    def __init__(self, gateway_url: str) -> None:
        self.gateway_url = gateway_url

    def solve(self, task: Task, episode: Episode, context: AgentContext) -> dict[str, Any]:
        data = domain_data(DOMAIN)
        gold = data.gold[task.id]
        first = gold.calls[0]
        episode.call(first.name, {})  # missing argument: validation
        episode.call(first.name, {**first.arguments, "extra": 1})  # unexpected: validation
        episode.call(first.name, {**first.arguments, "patient_id": 42})  # type mismatch
        episode.call("make_coffee", {"size": "large"})  # not in the catalog: hallucinated
        headers = {"authorization": f"Bearer {episode.token}"}
        inject(headers)
        raw = httpx.post(  # arguments that are not JSON at all: validation
            f"{self.gateway_url}/v1/episodes/{episode.id}/tools/{first.name}",
            content=b"{not json",
            headers=headers,
        )
        assert raw.status_code == 400
        distractors = {t.name for t in data.domain.distractors}
        episode.call(next(t["name"] for t in episode.tools if t["name"] in distractors), {})
        lifestyle = next(c for c in gold.calls if c.name == "score_lifestyle")
        smoking = lifestyle.arguments["smoking_status"]
        other = "Current" if smoking != "Current" else "Never"
        episode.call("score_lifestyle", {**lifestyle.arguments, "smoking_status": other})
        for call in gold.calls:
            episode.call(call.name, call.arguments)
        if task.id.endswith("2"):
            raise RuntimeError("the agent gave up")
        return (
            {**gold.outputs, "overall_risk": "unknown"} if task.id.endswith("1") else gold.outputs
        )


@pytest.fixture(scope="module")
def bad_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Bad episodes worked in this process (traced to the stack's collector), plus one opened
    by a 'crashed' agent that never sent a span: the records path and the trace store."""
    root = tmp_path_factory.mktemp("bad")
    data = domain_data(DOMAIN)
    with embedded_stack([DOMAIN], root / "logs", DATA_ROOT, traces=root / "traces") as stack:
        tracing.setup_tracing(
            "sopgym-test-agent", endpoint=stack.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        )
        client = GatewayClient(stack.gateway_url)
        records: dict[str, Any] = {}
        try:
            for task in data.tasks[:4]:
                job = {"task": task.to_json(), "distractors": 3, "sop_variant": "clean",
                       "run_id": "bad"}  # fmt: skip
                report = run_job(BadAgent(stack.gateway_url), client, job, 60.0, model="none")
                assert report.episode_id, report
                record = client.record(report.episode_id, stack.admin_token)
                records[task.id] = Trajectory.from_json(record)
            crashed = data.tasks[4]
            episode = client.open(crashed.id, DOMAIN, meta={"agent": "bad", "run_id": "bad"})
            episode.call(data.gold[crashed.id].calls[0].name, {})
            records[crashed.id] = None  # the runner scores a dead worker's task as incomplete
            tracing.flush()
        finally:
            tracing.shutdown_tracing()
            client.close()
    yield root, records


def test_bad_calls_score_alike_from_traces_and_records(bad_run: tuple[Path, Any]) -> None:
    root, records = bad_run
    data = domain_data(DOMAIN)
    taskset = TaskSet(DATA_ROOT)
    expected = [(DOMAIN, task_id, 0) for task_id in records]
    result = evaluate(
        load_spans(root / "traces", sc.EVALUATED_SCOPES), taskset, expected, ("bad", "bad")
    )
    rows = {r["task_id"]: r for r in result["per_task"]}
    assert set(rows) == set(records)
    tasks = {t.id: t for t in data.tasks}
    for task_id, trajectory in records.items():
        expected_score = score_episode(
            data.domain, tasks[task_id], trajectory, data.gold[task_id]
        ).to_json()
        assert rows[task_id]["score"] == expected_score, task_id
    first = rows[data.tasks[0].id]["score"]
    assert first["success"]
    kinds = {"validation", "type", "hallucinated", "distractor", "wrong_value"}
    assert kinds <= set(first["errors"]) and first["errors"]["validation"] >= 3
    assert rows[data.tasks[1].id]["score"]["errors"]["wrong_final"] == 1
    gave_up = rows[data.tasks[2].id]
    assert not gave_up["score"]["completed"] and "RuntimeError" in gave_up["reason"]
    crashed = rows[data.tasks[4].id]
    assert crashed["score"]["errors"] == {"incomplete": 1} and not crashed["trace_complete"]
    assert "root span missing" in crashed["reason"]
    assert result["param_failure_rate"] > 0 and result["wrong_tool_rate"] > 0


def test_validation_failures_are_span_events(bad_run: tuple[Path, Any]) -> None:
    root, _ = bad_run
    spans = load_spans(root / "traces").spans
    events = [
        (s.service, attrs)
        for s in spans
        for name, attrs in s.events()
        if name == sc.EVENT_TOOL_ERROR
    ]
    codes = {(service, a[sc.EVENT_ERROR_CODE], a[sc.EVENT_ERROR_FIELD]) for service, a in events}
    assert ("sopgym-gateway", "missing_argument", "patient_id") in codes
    assert ("sopgym-tools", "missing_argument", "patient_id") in codes
    assert ("sopgym-gateway", "unexpected_argument", "extra") in codes
    assert ("sopgym-gateway", "type_mismatch", "patient_id") in codes
    assert ("sopgym-gateway", "unknown_tool", "") in codes
    classes = {a[sc.EVENT_ERROR_CODE]: a[sc.EVENT_ERROR_CLASS] for _, a in events}
    assert classes["type_mismatch"] == "type" and classes["invalid_json"] == "validation"
    tool_spans = [s for s in spans if s.attributes.get(sc.GEN_AI_OPERATION) == sc.OP_EXECUTE_TOOL]
    refused = [s for s in tool_spans if s.attributes.get(sc.ERROR_TYPE) == "unknown_tool"]
    assert refused and all(s.status == otlp.STATUS_ERROR for s in refused)


def test_runner_evaluator_and_report_give_identical_scores(noisy_run: Path) -> None:
    """One scoring entry: the runner's rows, the evaluator's rows from the same run's traces and
    the report's data agree task by task, scorer by scorer, on an imperfect run."""
    records = _results(noisy_run)
    evaluated = evaluate_path(noisy_run, DATA_ROOT)
    result = CliRunner().invoke(cli, ["report", str(noisy_run), "--data-root", str(DATA_ROOT)])
    assert result.exit_code == 0, result.output
    reported = orjson.loads((noisy_run / "eval.json").read_bytes())
    assert len(records) == len(evaluated["per_task"]) == len(reported["per_task"]) == TASKS
    for row, saved in zip(evaluated["per_task"], reported["per_task"], strict=True):
        assert row["trace_complete"], row["reason"]
        assert row["score"] == saved["score"] == records[row["task_id"]]["score"], row["task_id"]
    scores = [r["score"] for r in records.values()]
    assert any(not s["success"] for s in scores) and any(s["success"] for s in scores)
    assert any(s["errors"] for s in scores) and all(s["scores"] for s in scores)
    summary = orjson.loads((noisy_run / "summary.json").read_bytes())
    shared = ("tsr", "ecr", "tool_f1", "errors", "order_violations", "scores")
    assert {k: summary[k] for k in shared} == {k: reported[k] for k in shared}
    by_title = {t.title.split(" (")[0]: t for t in tables(reported)}
    assert [row[0] for row in by_title["Scorers"].rows] == sorted(summary["scores"])
    per_task = by_title["Per task"]
    verdicts = {row[0]: row[3] for row in per_task.rows}
    assert verdicts == {
        task_id: "yes" if r["score"]["success"] else ("no" if r["score"]["completed"] else "inc.")
        for task_id, r in records.items()
    }


def test_the_run_service_and_merge_write_the_report_of_a_traced_run_only(
    noisy_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``merge --report`` and the run service report through the evaluation layer, not the
    command line: a traced run gets report.md and report.html, a folder without traces none."""
    from sopgym.orchestration.run_report import write_report_if_traced

    (noisy_run / "report.md").unlink(missing_ok=True)
    write_report_if_traced(noisy_run, DATA_ROOT)
    assert (noisy_run / "report.md").exists() and (noisy_run / "report.html").exists()
    write_report_if_traced(tmp_path, DATA_ROOT)
    assert "report skipped" in capsys.readouterr().err and not (tmp_path / "report.md").exists()

"""The generation pipeline (``sopgym generate``) replayed from a cassette, offline.

``tests/fixtures/generation/refunds/`` holds one answer per stage for a small refund-desk
domain. Replayed as they are, every gate passes and the oracle solves every task through real
processes; each corrupted copy makes exactly one gate fail, and the report names it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sopgym.generation.model import GenerationModel
from sopgym.generation.pipeline import (
    GenerationError,
    Outcome,
    Pipeline,
    Request,
)
from sopgym.generation.prompts import STAGES as STAGE_REQUESTS
from sopgym.generation.stages import STAGE_NAMES, Settings
from sopgym.observability import tracing

CASSETTE = Path(__file__).parent / "fixtures" / "generation" / "refunds"
TASK = "Decide refund requests for an online homeware store"
NAME = "generated/refunds"


@pytest.fixture(autouse=True)
def _registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private import registry and data cache (the oracle's processes inherit both)."""
    monkeypatch.setenv("SOPGYM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SOPGYM_DATA", str(tmp_path / "cache"))


def cassette(tmp_path: Path, changes: dict[str, Callable[[str], str]] | None = None) -> Path:
    """A copy of the cassette with ``changes`` applied ({file name: old text -> new text})."""
    folder = tmp_path / "cassette"
    shutil.copytree(CASSETTE, folder)
    for name, change in (changes or {}).items():
        path = folder / name
        changed = change(path.read_text() if path.exists() else "")
        path.write_text(changed)
    return folder


def run_pipeline(
    tmp_path: Path,
    folder: Path,
    retries: int = 0,
    to_stage: str | None = None,
    **run: str,
) -> Outcome:
    pipeline = Pipeline(
        tmp_path / "out",
        Request(TASK, "", NAME),
        GenerationModel.from_spec(f"replay:{folder}"),
        Settings(timeout_s=60, oracle_timeout_s=300),
        retries,
    )
    return pipeline.run(to_stage=to_stage, **run)


def replace(old: str, new: str) -> Callable[[str], str]:
    def change(text: str) -> str:
        assert old in text, f"the cassette no longer holds {old!r}"
        return text.replace(old, new)

    return change


def test_replayed_session_passes_every_gate_before_the_oracle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(tracing, "_provider", provider)  # the agents' chat spans land here
    outcome = run_pipeline(tmp_path, cassette(tmp_path), to_stage="complexity")
    assert outcome.failure is None
    assert [s for s, r in outcome.stages.items() if r.status == "passed"] == list(STAGE_NAMES[:-1])
    out = tmp_path / "out"
    gold = [json.loads(line) for line in (out / "data" / "gold.jsonl").read_text().splitlines()]
    decisions = {g["outputs"]["refund_decision"] for g in gold}
    assert decisions == {"full_refund", "store_credit", "manual_review", "rejected"}
    # the generating process never imported the generated code: the gates ran it in children
    assert not [m for m in sys.modules if m.startswith("_sopgym_generated")]
    # each model call is a GenAI chat span (purpose: the stage) inside its stage's span
    spans = {s.name: s for s in memory.get_finished_spans()}
    chat = [s for s in memory.get_finished_spans() if s.name.startswith("chat ")]
    assert [(s.attributes or {})["sopgym.llm.purpose"] for s in chat] == [
        n for n in STAGE_NAMES if n not in ("tasks", "oracle")
    ]
    assert chat[0].parent is not None
    assert chat[0].parent.span_id == spans["generate context"].context.span_id


@pytest.mark.slow
def test_replayed_session_passes_the_oracle_through_real_processes(tmp_path: Path) -> None:
    outcome = run_pipeline(tmp_path, cassette(tmp_path))
    assert outcome.passed, outcome.failure
    out = tmp_path / "out"
    summary = json.loads((out / "oracle" / "oracle" / "summary.json").read_text())
    assert summary["tasks"] == summary["correct"] == 48 and summary["tsr"] == 1.0
    report = json.loads((out / "report.json").read_text())
    assert report["passed"] and "failure" not in report


@pytest.mark.slow
def test_generated_pack_runs_with_sopgym_run(tmp_path: Path) -> None:
    assert run_pipeline(tmp_path, cassette(tmp_path), to_stage="complexity").failure is None
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    from sopgym.generation.pack import register_pack

    register_pack(tmp_path / "out" / "pack")
    for sop in ("noisy", "abstract"):
        subprocess.run(
            [sys.executable, "-m", "sopgym", "run", NAME, "--agent", "oracle", "--sop", sop,
             "--runs-dir", str(tmp_path / "runs"), "--run-id", sop, "--no-trace"],
            check=True, env=env, capture_output=True, timeout=300,
        )  # fmt: skip
        summary = json.loads((tmp_path / "runs" / sop / "summary.json").read_text())
        assert summary["tsr"] == 1.0 and summary["tasks"] == 48


HANG = "import time\ntime.sleep(60)\n"

# (cassette file, change, the gate that must fail, the artifact it must name)
CORRUPTIONS: list[tuple[str, Callable[[str], str], str, str]] = [
    ("context.md", lambda t: "=== FILE: context.md ===\nA refund desk.\n=== END FILE ===\n",
     "context_written", "context.md"),
    ("context.md", replace("=== END FILE ===", ""), "answer_format", "transcripts/context"),
    ("schema.md", replace('"tables": {', '"tables": {{'), "json_parses", "schema.json"),
    ("schema.md", replace('"eligibility": {"enum"', '"eligibility": {"type": "string", "x"'),
     "schema_valid", "schema.json"),
    ("sop.md", replace("`manual_review`", "`review`"), "sop_names_outputs", "sop.md"),
    ("graph.md", replace('"get_refund_history": ["lookup_order"]',
                         '"get_refund_history": ["lookup_order"], '
                         '"lookup_order": ["issue_refund"]'),
     "graph_valid", "graph.json"),
    ("specs.md", replace('"accepted": {"type": "boolean"}', '"eligibility": {"type": "string"}'),
     "specs_valid", "specs.json"),
    ("tools.md", replace("import hashlib", "import hashlib\nimport no_such_module"),
     "tools_import", "tools/implementations.py"),
    ("tools.md", replace('40.0, "status": "delivered"', '40.0, "status": "lost"'),
     "tools_contract", "tools/implementations.py"),
    ("policy.md", replace('run.call("issue_refund"', 'run.call("refund_now"'), "policy_import",
     "policy.py"),
    ("generator.md", replace("rng.randint(0, 30)", "random.randint(0, 30)"), "generator_runs",
     "generator.py"),
    ("generator.md", replace("if i % 4 == 3 else", "if i % 4 == 3 and i < 8 else"),
     "branch_coverage", "generator.py"),
    ("policy.md", replace('decision = "store_credit"', 'decision = x["missing"]'), "policy_runs",
     "policy.py"),
    ("generator.md", replace('"reason": REASONS[i % len(REASONS)],',
                             '"reason": REASONS[i % len(REASONS)], "eligibility": "eligible",'),
     "no_leak", "generator.py"),
    ("tools.md", replace('return {"order_found": True, **{k: order[k] for k in ORDER_FIELDS}}',
                         'late = {"eligibility": "ineligible"} '
                         'if order["days_since_delivery"] > 30 else {}\n'
                         '    return {"order_found": True, **late, '
                         '**{k: order[k] for k in ORDER_FIELDS}}'),
     "no_leak", "tools/implementations.py"),
    ("complexity.md", replace("`store_credit`", "`credit`"), "sop_names_outputs", "sop_noisy.md"),
    ("complexity.md", replace('"get_loyalty_tier"', '"lookup_order"'), "distractors_valid",
     "distractors.json"),
    ("complexity.md", replace('return {"tier": customer["tier"] if customer else None}',
                              'return {"tier": len(customer["tier"])}'),
     "distractors_run", "tools/distractors.py"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("file", "change", "gate", "artifact"),
    CORRUPTIONS,
    ids=[f"{c[2]}-{c[0]}" for c in CORRUPTIONS],
)
def test_each_gate_catches_its_corrupted_cassette(
    tmp_path: Path, file: str, change: Callable[[str], str], gate: str, artifact: str
) -> None:
    outcome = run_pipeline(tmp_path, cassette(tmp_path, {file: change}), to_stage="complexity")
    assert not outcome.passed and outcome.failure is not None
    assert (outcome.failure.gate, outcome.failure.artifact.split("/out/")[-1]) == (gate, artifact)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["failure"]["gate"] == gate and report["failure"]["stage"] == outcome.failed_stage
    assert outcome.failed_stage is not None
    assert outcome.stages[outcome.failed_stage].status == "failed"


def test_tool_code_that_hangs_is_killed_and_reported(tmp_path: Path) -> None:
    folder = cassette(tmp_path, {"tools.md": replace("import hashlib", f"import hashlib\n{HANG}")})
    pipeline = Pipeline(
        tmp_path / "out",
        Request(TASK, "", NAME),
        GenerationModel.from_spec(f"replay:{folder}"),
        Settings(timeout_s=1, oracle_timeout_s=300),
        retries=0,
    )
    outcome = pipeline.run(to_stage="tools")
    assert outcome.failure is not None
    assert (outcome.failure.gate, outcome.failure.artifact) == (
        "tools_timeout",
        "tools/implementations.py",
    )


@pytest.mark.slow
def test_the_oracle_gate_fails_a_tool_the_services_cannot_answer(tmp_path: Path) -> None:
    """Every in-process gate passes, but one tool returns a Decimal on a path the contract tests
    never take: the tool service cannot send it, so the oracle's gold call is refused."""
    folder = cassette(
        tmp_path,
        {
            "tools.md": replace(
                'return {"accepted": accepted, "reference": f"RF-{digest.upper()}"}',
                'import decimal\n    extra = {"paid": decimal.Decimal(args["amount"])} '
                'if args["amount"] > 300 else {}\n'
                '    return {"accepted": accepted, "reference": f"RF-{digest.upper()}", **extra}',
            )
        },
    )
    outcome = run_pipeline(tmp_path, folder)
    assert outcome.failure is not None
    assert (outcome.failed_stage, outcome.failure.gate) == ("oracle", "oracle_100")
    assert "the oracle solved" in outcome.failure.message


def test_a_gate_error_is_fed_back_and_the_retry_passes(tmp_path: Path) -> None:
    folder = cassette(tmp_path, {"schema.md": replace('"tables": {', '"tables": {{')})
    shutil.copy(CASSETTE / "schema.md", folder / "schema.2.md")
    outcome = run_pipeline(tmp_path, folder, retries=1, to_stage="schema")
    assert outcome.stages["schema"].status == "passed" and outcome.stages["schema"].attempts == 2
    second = (tmp_path / "out" / "transcripts" / "schema" / "attempt-2.prompt.md").read_text()
    assert "Gate `json_parses` failed on `schema.json`" in second
    assert '"tables": {{' in second  # the previous answer goes along


def test_a_computed_stage_sends_its_failure_to_the_stage_at_fault(tmp_path: Path) -> None:
    """Too few tasks reach a branch: the generator is asked again, then the tasks pass."""
    folder = cassette(tmp_path, {"generator.md": replace("TASK_COUNT = 48", "TASK_COUNT = 16")})
    shutil.copy(CASSETTE / "generator.md", folder / "generator.2.md")
    outcome = run_pipeline(tmp_path, folder, retries=1, to_stage="tasks")
    assert outcome.stages["tasks"].status == "passed"
    assert outcome.stages["generator"].attempts == 2
    second = (tmp_path / "out" / "transcripts" / "generator" / "attempt-2.prompt.md").read_text()
    assert "Gate `branch_coverage` failed" in second


def test_retries_are_bounded(tmp_path: Path) -> None:
    folder = cassette(tmp_path, {"sop.md": replace("`manual_review`", "`review`")})
    outcome = run_pipeline(tmp_path, folder, retries=2, to_stage="sop")
    assert outcome.failure is not None and outcome.stages["sop"].attempts == 3


def test_resume_after_a_failure_and_rerun_single_stages(tmp_path: Path) -> None:
    broken = cassette(tmp_path, {"policy.md": replace('run.call("issue_refund"', 'run.call("x"')})
    assert run_pipeline(tmp_path, broken, to_stage="tasks").failed_stage == "policy"
    shutil.copy(CASSETTE / "policy.md", broken / "policy.md")
    resumed = run_pipeline(tmp_path, broken, to_stage="tasks")
    assert resumed.ran == ["policy", "generator", "tasks"] and resumed.failure is None
    assert resumed.stages["schema"].attempts == 1  # passed earlier: not asked again
    again = run_pipeline(tmp_path, broken, only_stage="sop")
    assert again.ran == ["sop"] and again.stages["sop"].status == "passed"
    later = run_pipeline(tmp_path, broken, from_stage="generator", to_stage="tasks")
    assert later.ran == ["generator", "tasks"]
    with pytest.raises(GenerationError, match="earlier stages have not passed"):
        run_pipeline(tmp_path, broken, only_stage="oracle")


def test_an_output_folder_of_another_request_is_refused(tmp_path: Path) -> None:
    run_pipeline(tmp_path, cassette(tmp_path), to_stage="context")
    pipeline = Pipeline(
        tmp_path / "out",
        Request("Something else entirely", "", NAME),
        GenerationModel.from_spec(f"replay:{tmp_path / 'cassette'}"),
        Settings(timeout_s=60, oracle_timeout_s=60),
    )
    with pytest.raises(GenerationError, match="another request"):
        pipeline.run()


def test_cli_reports_the_failed_gate_and_exits_1(tmp_path: Path) -> None:
    from sopgym.cli import main

    folder = cassette(tmp_path, {"sop.md": replace("`manual_review`", "`review`")})
    result = CliRunner().invoke(
        main,
        ["generate", TASK, "--model", f"replay:{folder}", "--out", str(tmp_path / "out"),
         "--name", "refunds", "--retries", "0"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "gate sop_names_outputs failed on sop.md" in result.output
    assert "report:" in result.output


def test_record_writes_a_cassette_that_replays(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded"
    pipeline = Pipeline(
        tmp_path / "out",
        Request(TASK, "", NAME),
        GenerationModel.from_spec(f"replay:{CASSETTE}", record=recorded),
        Settings(timeout_s=60, oracle_timeout_s=60),
    )
    assert pipeline.run(to_stage="sop").failure is None
    assert sorted(p.name for p in recorded.iterdir()) == [
        "context.md", "schema.md", "sop.md", "usage.json"
    ]  # fmt: skip
    assert (recorded / "sop.md").read_text() == (CASSETTE / "sop.md").read_text()
    replayed = run_pipeline(tmp_path / "again", recorded, to_stage="sop")
    assert replayed.failure is None


class _CassetteServer(ThreadingHTTPServer):
    """An OpenAI-compatible endpoint on loopback answering each stage from the cassette: the
    stage is the one whose request the prompt carries."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _CassetteHandler)
        self.requests: list[dict] = []


class _CassetteHandler(BaseHTTPRequestHandler):
    server: _CassetteServer

    def log_message(self, *args: object) -> None:
        pass

    def _reply(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # the preflight's /models probe
        self._reply({"object": "list", "data": [{"id": "cassette", "object": "model"}]})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.requests.append(request)
        prompt = request["messages"][-1]["content"]
        stage = next(s for s, text in STAGE_REQUESTS.items() if text in prompt)
        self._reply(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {
                            "role": "assistant",
                            "content": (CASSETTE / f"{stage}.md").read_text(),
                        },
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt) // 4,
                    "completion_tokens": 100,
                    "total_tokens": 0,
                },
            }
        )


def test_generate_through_an_openai_compatible_endpoint(tmp_path: Path) -> None:
    from sopgym.cli import main

    server = _CassetteServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = CliRunner().invoke(
            main,
            ["generate", TASK, "--model", "openai:cassette", "--base-url",
             f"http://127.0.0.1:{server.server_port}/v1", "--out", str(tmp_path / "out"),
             "--name", "refunds", "--to-stage", "sop"],
        )  # fmt: skip
    finally:
        server.shutdown()
    assert result.exit_code == 0, result.output
    assert [r["model"] for r in server.requests] == ["cassette"] * 3
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [report["stages"][s]["status"] for s in ("context", "schema", "sop")] == ["passed"] * 3
    assert report["stages"]["schema"]["output_tokens"] == 100
    assert report["totals"]["input_tokens"] > 0


def test_a_model_that_cannot_answer_stops_the_run_with_a_report(tmp_path: Path) -> None:
    folder = cassette(tmp_path)
    (folder / "sop.md").unlink()
    outcome = run_pipeline(tmp_path, folder, to_stage="graph")
    assert outcome.failure is not None
    assert (outcome.failed_stage, outcome.failure.gate) == ("sop", "model_call")
    assert "has no sop.md" in outcome.failure.message
    assert outcome.stages["schema"].status == "passed"

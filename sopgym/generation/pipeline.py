"""Running the stages: artifacts on disk, resumable, gated, with bounded retries and a report.

The output folder holds everything a reviewer needs::

    <out>/request.json     the business task, its context and the pack's name
    <out>/state.json       per stage: passed or failed, attempts, tokens, seconds (resume)
    <out>/pack/            the domain pack (a normal domain folder; served once registered)
    <out>/transcripts/     every attempt's prompt and raw answer
    <out>/data/            the tasks and the labels the reference policy derived, coverage
    <out>/oracle/          the oracle's run through real processes
    <out>/report.json      the outcome: the summary, or the gate and artifact that stopped it

A stage is marked passed only once all its gates passed, so a run that crashed or was stopped
resumes at the first stage not passed. ``from_stage`` runs that stage and all after it again;
``only_stage`` runs just that one (its predecessors must have passed); ``to_stage`` stops
after that one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sopgym.agents.llm import ModelCallError
from sopgym.core.exceptions import UsageError
from sopgym.core.jsonio import write_atomic
from sopgym.generation.model import GenerationModel
from sopgym.generation.pack import pack_name_for, write_scaffold
from sopgym.generation.prompts import SYSTEM, parse_files, stage_prompt
from sopgym.generation.stages import STAGE_NAMES, GateFailure, Settings, Stage, stage
from sopgym.observability.tracing import tracer

REQUEST_FILE = "request.json"
STATE_FILE = "state.json"
REPORT_FILE = "report.json"
PACK_DIR = "pack"
CONTEXT_INPUT = "context-input"
GENERATION_SCOPE = "sopgym.generation"


class GenerationError(UsageError, RuntimeError):
    """The run cannot start (a bad stage name, an output folder holding another request)."""


@dataclass
class StageRecord:
    status: str = "pending"  # pending | passed | failed
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    failure: dict[str, Any] | None = None


@dataclass
class Request:
    task: str
    context: str
    name: str  # the pack's registered name, generated/<slug>


@dataclass
class Outcome:
    passed: bool
    stages: dict[str, StageRecord]
    failure: GateFailure | None = None
    failed_stage: str | None = None
    report: Path | None = None
    ran: list[str] = field(default_factory=list)


Listener = Callable[[str, str, StageRecord], None]  # (stage, event, record): progress display


class Pipeline:
    def __init__(
        self,
        out: Path,
        request: Request,
        model: GenerationModel,
        settings: Settings,
        retries: int = 2,
        listener: Listener | None = None,
    ) -> None:
        self.out = out
        self.pack = out / PACK_DIR
        self.request = request
        self.model = model
        self.settings = settings
        self.retries = retries
        self.listener = listener or (lambda stage, event, record: None)
        self.records: dict[str, StageRecord] = {}

    # ---- state on disk ----
    def _prepare(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        request_path = self.out / REQUEST_FILE
        if request_path.exists():
            recorded = Request(**json.loads(request_path.read_text()))
            if recorded != self.request:
                raise GenerationError(
                    f"{self.out} holds the generation of another request ({recorded.name}: "
                    f"{recorded.task[:60]!r}); use another --out"
                )
        write_atomic(request_path, _dump(asdict(self.request)))
        write_scaffold(self.pack, self.request.name, self.request.task.strip().splitlines()[0])
        state = self.out / STATE_FILE
        saved = json.loads(state.read_text()) if state.exists() else {}
        self.records = {n: StageRecord(**saved.get(n, {})) for n in STAGE_NAMES}

    def _save(self) -> None:
        body = {n: asdict(r) for n, r in self.records.items()}
        write_atomic(self.out / STATE_FILE, _dump(body))

    # ---- running ----
    def run(
        self,
        from_stage: str | None = None,
        only_stage: str | None = None,
        to_stage: str | None = None,
    ) -> Outcome:
        """Run the stages due; ``to_stage`` stops after that one (the rest stay pending)."""
        for name in (from_stage, only_stage, to_stage):
            if name is not None and name not in STAGE_NAMES:
                raise GenerationError(f"unknown stage {name!r} (stages: {', '.join(STAGE_NAMES)})")
        self._prepare()
        todo = self._todo(from_stage, only_stage)
        if to_stage is not None:
            todo = [n for n in todo if STAGE_NAMES.index(n) <= STAGE_NAMES.index(to_stage)]
        for name in todo:  # what will run again starts from scratch
            self.records[name] = StageRecord()
        self._save()
        for name in STAGE_NAMES:
            status = self.records[name].status
            event = "queued" if name in todo else "skipped" if status == "passed" else status
            self.listener(name, event, self.records[name])
        ran: list[str] = []
        for name in todo:
            ran.append(name)
            failure = self._run_stage(stage(name))
            if failure is not None:
                return self._finish(ran, failure, name)
        return self._finish(ran, None, None)

    def _todo(self, from_stage: str | None, only_stage: str | None) -> list[str]:
        if only_stage is not None:
            before = STAGE_NAMES[: STAGE_NAMES.index(only_stage)]
            missing = [n for n in before if self.records[n].status != "passed"]
            if missing:
                pending = ", ".join(missing)
                raise GenerationError(
                    f"--only-stage {only_stage}: earlier stages have not passed ({pending})"
                )
            return [only_stage]
        if from_stage is not None:
            return list(STAGE_NAMES[STAGE_NAMES.index(from_stage) :])
        first = next((n for n in STAGE_NAMES if self.records[n].status != "passed"), None)
        return [] if first is None else list(STAGE_NAMES[STAGE_NAMES.index(first) :])

    def _run_stage(self, current: Stage) -> GateFailure | None:
        """Produce and gate ``current``; on a failure, ask the stage the gate blames again
        with the error, up to ``retries`` times, then stop."""
        record = self.records[current.name]
        self.listener(current.name, "running", record)
        started = time.perf_counter()
        redo, feedback, tries = current, None, 0
        # the stage's span parents its model calls' ``chat`` spans
        with tracer(GENERATION_SCOPE).start_as_current_span(f"generate {current.name}") as span:
            span.set_attribute("sopgym.generation.stage", current.name)
            while True:
                tries += 1
                failure = self._attempt(redo, feedback)
                if failure is None and redo is not current:  # repaired upstream: check again
                    failure = self._attempt(current, None)
                record.seconds = round(time.perf_counter() - started, 3)
                if failure is None:
                    record.status, record.failure = "passed", None
                    break
                record.failure = asdict(failure)
                target = failure.retry
                if target is None or tries > self.retries or target not in STAGE_NAMES:
                    record.status = "failed"
                    span.set_attribute("sopgym.generation.gate", failure.gate)
                    break
                redo, feedback = stage(target), failure
                self.listener(current.name, "retrying", record)
        self._save()
        self.listener(current.name, record.status, record)
        return failure

    def _attempt(self, current: Stage, feedback: GateFailure | None) -> GateFailure | None:
        """One answer from the model (model stages) and the stage's gates."""
        owner = self.records[current.name]
        owner.attempts += 1
        if current.asks_model:
            failure = self._ask(current, owner, feedback)
            if failure is not None:
                return failure
        self._save()
        for gate in current.gates:
            failure = gate(self.pack, self.settings)
            if failure is not None:
                return failure
        return None

    def _ask(
        self, current: Stage, record: StageRecord, feedback: GateFailure | None
    ) -> GateFailure | None:
        transcripts = self.out / "transcripts" / current.name
        transcripts.mkdir(parents=True, exist_ok=True)
        previous = transcripts / f"attempt-{record.attempts - 1}.answer.md"
        retry = None
        if feedback is not None and previous.exists():
            retry = (previous.read_text(), feedback.feedback())
        prompt = stage_prompt(current.name, self.request.task, self._shown(current), retry)
        (transcripts / f"attempt-{record.attempts}.prompt.md").write_text(prompt)
        try:
            reply = self.model.complete(current.name, record.attempts, SYSTEM, prompt)
        except ModelCallError as error:  # already retried where transient: stop and report
            return GateFailure("model_call", str(transcripts), str(error), None)
        (transcripts / f"attempt-{record.attempts}.answer.md").write_text(reply.text)
        record.input_tokens += reply.input_tokens
        record.output_tokens += reply.output_tokens
        self.listener(current.name, "answered", record)
        files = parse_files(reply.text)
        expected = set(current.artifacts)
        if set(files) != expected:
            message = (
                f"the answer must hold exactly the files {sorted(expected)} between "
                f"'=== FILE: <path> ===' and '=== END FILE ===' lines; it held {sorted(files)}"
            )
            return GateFailure("answer_format", str(transcripts), message, current.name)
        for path, body in files.items():
            target = self.pack / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body)
        return None

    def _shown(self, current: Stage) -> dict[str, str]:
        shown: dict[str, str] = {}
        for path in current.shown:
            if path == CONTEXT_INPUT:
                shown["context given by the user"] = self.request.context or "(none)"
            else:
                shown[path] = (self.pack / path).read_text()
        return shown

    def _finish(self, ran: list[str], failure: GateFailure | None, where: str | None) -> Outcome:
        totals = {
            "input_tokens": sum(r.input_tokens for r in self.records.values()),
            "output_tokens": sum(r.output_tokens for r in self.records.values()),
            "seconds": round(sum(r.seconds for r in self.records.values()), 3),
        }
        report: dict[str, Any] = {
            "name": self.request.name,
            "model": self.model.label,
            "passed": failure is None and all(r.status == "passed" for r in self.records.values()),
            "pack": str(self.pack),
            "ran": ran,
            "stages": {n: asdict(r) for n, r in self.records.items()},
            "totals": totals,
        }
        if failure is not None:
            report["failure"] = {"stage": where, **asdict(failure)}
        path = self.out / REPORT_FILE
        write_atomic(path, _dump(report))
        return Outcome(report["passed"], self.records, failure, where, path, ran)


def _dump(body: Any) -> bytes:
    return json.dumps(body, indent=2).encode() + b"\n"


def default_name(task: str) -> str:
    words = [w for w in "".join(c if c.isalnum() else " " for c in task.lower()).split() if w]
    return pack_name_for("_".join(words[:3]) or "pack")

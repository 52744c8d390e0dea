"""The evaluator on traces built in memory by the real span helpers (the agent's root span,
the gateway's open / call / finish annotations), through the real OTLP JSON round trip:
complete episodes score exactly like their records; gaps make an episode incomplete, listed
with a reason; nothing is dropped; repeated trials are kept apart; the finish span's final state
and conversation reach the scorers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sopgym.core.tasks import Gold
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.evaluation import report
from sopgym.evaluation.episodes import assemble
from sopgym.evaluation.evaluator import TaskSet, evaluate, run_expectation
from sopgym.evaluation.scorers.calls import order_violations
from sopgym.evaluation.scoring import score_episode
from sopgym.gateway.episodes import Episode
from sopgym.observability import episode_spans, genai, lean, otlp, tracing
from sopgym.observability import semconv as sc
from sopgym.observability.lean import LeanTracer
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"


class Traces:
    """Episodes written the way the agent worker and the gateway write them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "t"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        monkeypatch.setattr(tracing, "_provider", self.provider)  # genai's spans land here
        self.gateway = LeanTracer(
            self.provider, self.provider._active_span_processor, sc.SCOPE_GATEWAY
        )
        self.data = domain_data(DOMAIN)
        self.count = 0

    def gold(self, index: int) -> Gold:
        return self.data.gold[self.data.tasks[index].id]

    def _gateway_span(self, annotate: Any) -> None:
        parent = trace.get_current_span().get_span_context()
        traceparent = f"00-{parent.trace_id:032x}-{parent.span_id:016x}-01"
        span, token = self.gateway.start("POST /v1/episodes", traceparent, {})
        annotate()
        self.gateway.end(span, token)

    def episode(
        self,
        index: int,
        calls: list[CallRecord] | None = None,
        outputs: dict[str, Any] | None = None,
        *,
        root: bool = True,
        finish: bool = True,
        drop_index: int | None = None,
        finish_count_extra: int = 0,
        run_id: str = "run-1",
        llm_usage: list[dict[str, Any]] | None = None,
        trial: int | None = None,
        finish_attributes: dict[str, Any] | None = None,
    ) -> Trajectory:
        """One episode's spans; returns the trajectory the gateway would have recorded."""
        gold = self.gold(index)
        calls = (
            [CallRecord(c.name, c.arguments, 200) for c in gold.calls] if calls is None else calls
        )
        outputs = gold.outputs if outputs is None else outputs
        self.count += 1
        episode = Episode(
            id=f"ep-{self.count:016x}",
            token="t",
            task_id=gold.task_id,
            domain=DOMAIN,
            tools=sorted({c.name for c in gold.calls}),
            distractors=set(),
            meta={"agent": "unit", "run_id": run_id},
        )

        def work() -> None:
            self._gateway_span(lambda: episode_spans.annotate_open(episode, "clean"))
            for number, call in enumerate(calls):
                episode.calls.append(call)
                if number != drop_index:
                    self._gateway_span(
                        lambda n=number, c=call: episode_spans.annotate_call(episode, n, c)
                    )
            if finish:
                episode.outputs, episode.finished_at = outputs, 1.0
                episode.calls.extend([CallRecord("lost", {}, 200)] * finish_count_extra)
                self._gateway_span(lambda: self._finish(episode, finish_attributes or {}))
                del episode.calls[len(calls) :]

        if root:
            with genai.task_span(gold.task_id, DOMAIN, "unit", "m", run_id) as span:
                if trial is not None:
                    span.set_attribute(sc.TRIAL, trial)
                work()
                status, error = ("finished", None) if finish else ("failed", "GaveUp: no answer")
                genai.end_task(span, status, episode.id, error, llm_usage)
        else:  # the agent crashed: none of its spans ever left its process
            work()
        return episode.trajectory()

    @staticmethod
    def _finish(episode: Episode, attributes: dict[str, Any]) -> None:
        """The gateway's finish annotation, plus what a stateful or conversational episode's
        finish span carries (written by the gateway where it records them)."""
        episode_spans.annotate_finish(episode)
        lean.current_span().set_attributes(attributes)

    def batch(self) -> otlp.SpanBatch:
        """What the evaluator reads back from the store."""
        document = otlp.request_to_json(encode_spans(self.memory.get_finished_spans()))
        return otlp.spans_of(document, sc.EVALUATED_SCOPES)


@pytest.fixture
def traces(monkeypatch: pytest.MonkeyPatch) -> Iterator[Traces]:
    yield Traces(monkeypatch)


def _rows(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["task_id"]: r for r in result["per_task"]}


def _record_score(
    traces: Traces, index: int, trajectory: Trajectory, agent_error: str | None = None
) -> dict[str, Any]:
    """The runner's score of the episode (``agent_error``: what its worker reported)."""
    task = traces.data.tasks[index]
    gold = traces.gold(index)
    return score_episode(traces.data.domain, task, trajectory, gold, None, agent_error).to_json()


def test_complete_episodes_score_like_their_records(traces: Traces) -> None:
    gold = traces.gold(1)
    first = gold.calls[0]
    bad_calls = [
        CallRecord(first.name, {}, 422, "missing_argument", "patient_id"),
        CallRecord(first.name, {**first.arguments, "x": 1}, 422, "unexpected_argument", "x"),
        CallRecord(first.name, {"patient_id": 5}, 422, "type_mismatch", "patient_id"),
        CallRecord("no_such_tool", {"a": 1}, 404, "unknown_tool", in_catalog=False),
        CallRecord(first.name, {**first.arguments, "policy_number": "WRONG"}, 200),
        *[CallRecord(c.name, c.arguments, 200) for c in gold.calls],
    ]
    wrong_outputs = {**gold.outputs, "lifestyle_risk": "nonsense"}
    recorded = {
        0: traces.episode(0, llm_usage=[{"input_tokens": 100, "output_tokens": 7}] * 3),
        1: traces.episode(1, bad_calls, wrong_outputs),
        2: traces.episode(2, outputs={}),
        3: traces.episode(3, [], finish=False),  # gave up: no calls, never finished
    }
    result = evaluate(traces.batch(), TaskSet(DATA_ROOT))
    rows = _rows(result)
    for index, trajectory in recorded.items():
        task_id = traces.gold(index).task_id
        said = None if trajectory.finished else "GaveUp: no answer"  # as its worker reported
        assert rows[task_id]["score"] == _record_score(traces, index, trajectory, said), task_id
        assert rows[task_id]["trace_complete"]
    errors = rows[gold.task_id]["score"]["errors"]
    assert errors == {
        "validation": 2,
        "type": 1,
        "hallucinated": 1,
        "wrong_value": 1,
        "wrong_final": 1,
    }
    assert rows[traces.gold(0).task_id]["score"]["success"]
    usage = [
        rows[traces.gold(0).task_id][k] for k in ("llm_calls", "input_tokens", "output_tokens")
    ]
    assert usage == [3, 300, 21] and result["tokens_per_task"] == 321 / 4
    blank = rows[traces.gold(3).task_id]
    assert blank["score"]["errors"] == {"blank": 1} and not blank["score"]["completed"]
    assert "not finished" in blank["reason"]
    assert result["tasks"] == 4 and result["completed"] == 3 and result["incomplete_traces"] == 0
    assert result["agents"]["unit/m"]["tasks"] == 4


def test_the_reports_per_task_table_names_the_wrong_fields_values(traces: Traces) -> None:
    """Built from traces, the per-task table's "failed because" gives each wrong field's
    expected and given values (not ``expected null, given "(missing)"``), as the drill-down
    and ``sopgym show`` do."""
    gold = traces.gold(1)
    expected = gold.outputs["lifestyle_risk"]
    traces.episode(1, None, {**gold.outputs, "lifestyle_risk": "nonsense"})
    result = evaluate(traces.batch(), TaskSet(DATA_ROOT))
    markdown = report.markdown(result)
    row = next(line for line in markdown.splitlines() if line.startswith(f"| {gold.task_id} "))
    assert f'lifestyle_risk (expected "{expected}", given "nonsense")' in row
    assert "(missing)" not in row and "expected null" not in row


def test_incomplete_trace_data_is_scored_incomplete_and_listed(traces: Traces) -> None:
    traces.episode(0, root=False)  # agent crashed: its root span never arrived
    traces.episode(1, drop_index=2)  # a call span lost
    traces.episode(2, finish_count_extra=2)  # the finish span counts calls that never arrived
    traces.episode(3)  # complete
    taskset = TaskSet(DATA_ROOT)
    expected = [(DOMAIN, traces.data.tasks[i].id, 0) for i in range(5)]  # 4: no trace at all
    result = evaluate(traces.batch(), taskset, expected, run=("run-1", "unit"))
    rows = _rows(result)
    reasons = {i["task_id"]: i["reason"] for i in result["incomplete"]}
    ids = [t.id for t in traces.data.tasks[:5]]
    assert "root span missing" in reasons[ids[0]]
    assert "gap in call indices" in reasons[ids[1]]
    assert "2 of" in reasons[ids[2]] and "call spans missing" in reasons[ids[2]]
    assert ids[3] not in reasons and rows[ids[3]]["score"]["success"]
    assert reasons[ids[4]] == "no trace of this task"
    for task_id in (ids[0], ids[1], ids[2], ids[4]):
        assert rows[task_id]["score"]["errors"] == {"incomplete": 1}
        assert not rows[task_id]["score"]["completed"]
    assert result["tasks"] == 5 and result["ecr"] == pytest.approx(0.2)
    assert result["incomplete_traces"] == 4


def test_call_spans_read_out_of_order_rebuild_the_calls_in_call_order(traces: Traces) -> None:
    """Exporters may flush spans out of order: the trajectory follows the call indices, and
    a call span read twice is a gap in them, never a call made twice."""
    recorded = traces.episode(0, calls=[CallRecord(n, {"n": n}, 200) for n in ("a", "b", "c")])
    spans = traces.batch().spans[::-1]
    (episode,) = assemble(spans)
    rebuilt = episode.trajectory(traces.gold(0))
    assert rebuilt is not None
    made = [(c.name, c.arguments) for c in recorded.calls]
    assert made == [("a", {"n": "a"}), ("b", {"n": "b"}), ("c", {"n": "c"})]
    assert [(c.name, c.arguments) for c in rebuilt.calls] == made
    call = next(s for s in spans if s.attributes.get(sc.GATEWAY_OP) == sc.OP_CALL)
    (twice,) = assemble([*spans, call])
    assert twice.trajectory() is None
    assert twice.problems == ["call spans missing or duplicated (gap in call indices)"]


def test_attempts_runs_and_unknown_tasks_are_never_dropped(traces: Traces) -> None:
    traces.episode(0, outputs={})  # first attempt, superseded by the next
    traces.episode(0)
    traces.episode(1, run_id="run-2")
    result = evaluate(traces.batch(), TaskSet(DATA_ROOT))
    assert [s["why"] for s in result["superseded"]] == ["a later attempt of the task exists"]
    assert {(r["run_id"], r["task_id"]) for r in result["per_task"]} == {
        ("run-1", traces.gold(0).task_id),
        ("run-2", traces.gold(1).task_id),
    }
    assert _rows(result)[traces.gold(0).task_id]["score"]["success"]
    only_two = evaluate(traces.batch(), TaskSet(DATA_ROOT), run_filter="run-2")
    assert [r["task_id"] for r in only_two["per_task"]] == [traces.gold(1).task_id]
    elsewhere = evaluate(traces.batch(), TaskSet(DATA_ROOT), expected=[])
    assert len(elsewhere["unmatched"]) == 2  # episodes of tasks the run did not expect


def test_arguments_too_large_for_a_span_match_by_digest(
    traces: Traces, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(episode_spans, "_limit", lambda: 16)
    gold = traces.gold(0)
    calls = [CallRecord(c.name, c.arguments, 200) for c in gold.calls]
    calls.append(CallRecord(gold.calls[0].name, {**gold.calls[0].arguments, "pad": "x" * 50}, 200))
    trajectory = traces.episode(0, calls)
    (row,) = evaluate(traces.batch(), TaskSet(DATA_ROOT))["per_task"]
    assert row["score"] == _record_score(traces, 0, trajectory)
    assert row["score"]["errors"] == {"wrong_value": 1}


def test_order_violations_follow_the_dependency_graph() -> None:
    deps = domain_data(DOMAIN).domain.dependencies

    def trajectory(*calls: tuple[str, str | None]) -> Trajectory:
        return Trajectory("t", "e", [CallRecord(n, {}, 200, code) for n, code in calls])

    ok = trajectory(("validate_insurance", None), ("check_prescription_benefits", None))
    assert len(order_violations(ok.calls, deps)) == 0
    early = trajectory(("check_prescription_benefits", None), ("validate_insurance", None))
    assert len(order_violations(early.calls, deps)) == 1
    malformed_first = trajectory(
        ("validate_insurance", "missing_argument"),
        ("check_prescription_benefits", None),
        ("validate_insurance", None),
    )
    assert len(order_violations(malformed_first.calls, deps)) == 1  # a rejected call: nothing
    data_refusal = trajectory(
        ("validate_insurance", "not_found"), ("check_prescription_benefits", None)
    )
    assert len(order_violations(data_refusal.calls, deps)) == 0  # it ran; the SOP branches
    for gold in list(domain_data(DOMAIN).gold.values())[:20]:
        calls = [CallRecord(c.name, c.arguments, 200) for c in gold.calls]
        assert len(order_violations(calls, deps)) == 0


def test_trials_of_a_task_are_kept_apart(traces: Traces) -> None:
    traces.episode(0, trial=0)
    traces.episode(0, outputs={}, trial=1)  # a later trial: its own row, superseding nothing
    traces.episode(0, trial=1)  # a retry of trial 1 supersedes the first attempt of it
    task_id = traces.gold(0).task_id
    expected = [(DOMAIN, task_id, trial) for trial in range(3)]  # trial 2: no trace
    result = evaluate(traces.batch(), TaskSet(DATA_ROOT), expected, run=("run-1", "unit"))
    rows = {r["trial"]: r for r in result["per_task"]}
    assert sorted(rows) == [0, 1, 2] and all(r["task_id"] == task_id for r in rows.values())
    assert rows[0]["score"]["success"] and rows[1]["score"]["success"]
    assert rows[2]["reason"] == "no trace of this task"
    assert [(s["trial"], s["why"]) for s in result["superseded"]] == [
        (1, "a later attempt of the task exists")
    ]
    assert result["tasks"] == 3 and result["tsr"] == pytest.approx(2 / 3)


def test_final_state_and_messages_come_from_the_finish_span(traces: Traces) -> None:
    state = {"registered": [{"id": "P-1", "copay": 20}], "open": False}
    messages = [{"role": "agent", "content": "Your id?"}, {"role": "user", "content": "P-1"}]
    attributes = {sc.FINAL_STATE: orjson.dumps(state).decode(),
                  sc.MESSAGES: orjson.dumps(messages).decode()}  # fmt: skip
    traces.episode(0, finish_attributes=attributes)
    (episode,) = assemble(traces.batch().spans)
    rebuilt = episode.trajectory(traces.gold(0))
    assert rebuilt is not None
    assert rebuilt.final_state == state and rebuilt.messages == messages


@pytest.mark.parametrize(
    ("flag", "what"),
    [(sc.FINAL_STATE_TRUNCATED, "final state"), (sc.MESSAGES_TRUNCATED, "conversation messages")],
)
def test_a_truncated_state_or_conversation_is_a_trace_problem(
    traces: Traces, flag: str, what: str
) -> None:
    traces.episode(0, finish_attributes={flag: 4096})
    (row,) = evaluate(traces.batch(), TaskSet(DATA_ROOT))["per_task"]
    assert not row["trace_complete"] and row["score"]["errors"] == {"incomplete": 1}
    assert f"{what} truncated on the finish span" in row["reason"]


def test_a_run_of_k_trials_expects_every_task_k_times(tmp_path: Path) -> None:
    config = {"domains": [DOMAIN], "limit": 2, "trials": 3, "agent": "unit"}
    (tmp_path / "config.json").write_bytes(orjson.dumps(config))
    expected, run = run_expectation(tmp_path, TaskSet(DATA_ROOT))
    ids = [t.id for t in domain_data(DOMAIN).tasks[:2]]
    assert expected == [(DOMAIN, i, trial) for i in ids for trial in range(3)]
    assert run == (tmp_path.name, "unit")
    del config["trials"]  # runs from before trials existed: one each
    (tmp_path / "config.json").write_bytes(orjson.dumps(config))
    assert run_expectation(tmp_path, TaskSet(DATA_ROOT))[0] == [(DOMAIN, i, 0) for i in ids]

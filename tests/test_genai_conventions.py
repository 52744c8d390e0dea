"""The latest OpenTelemetry GenAI conventions, opted in to with ``OTEL_SEMCONV_STABILITY_OPT_IN``:
a stored trace store of a real run written under them (4 patient-intake tasks, the ReAct agent
on the scripted model's ``noisy`` profile; the chat and tool-service spans left out; its
config and results as the run wrote them) has the
new span names, attributes and evaluation events, and the evaluator scores it exactly as the
run's gateway records scored it, and exactly as the same store under the old names."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sopgym.core import dataset
from sopgym.core.registry import load_domain
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.episodes import assemble
from sopgym.evaluation.evaluator import evaluate_path
from sopgym.evaluation.scoring import score_episode
from sopgym.evaluation.sources import load_spans
from sopgym.observability import genai
from sopgym.observability import semconv as sc
from sopgym.observability.task_spans import evaluation_attributes, task_root
from tests.helpers import DATA_ROOT

LATEST = Path(__file__).parent / "fixtures" / "traced_run_latest"


def _spans(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """(scope, span) of every span in a run folder's stored OTLP JSON lines, attributes and
    event attributes flattened to dicts."""
    found = []
    for path in sorted((folder / "traces").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            for resource in orjson.loads(line)["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        span["attributes"] = _flat(span.get("attributes", []))
                        for event in span.get("events", []):
                            event["attributes"] = _flat(event.get("attributes", []))
                        found.append((scope["scope"]["name"], span))
    return found


def _flat(attributes: list[dict[str, Any]]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in attributes}


def test_the_opt_in_is_read_from_the_comma_separated_variable() -> None:
    assert sc.latest_genai({sc.STABILITY_OPT_IN_ENV: "http, gen_ai_latest_experimental"})
    assert not sc.latest_genai({sc.STABILITY_OPT_IN_ENV: "http"})
    assert not sc.latest_genai({})


def test_a_stored_store_under_the_latest_names_has_them() -> None:
    spans = _spans(LATEST)
    roots = [s for scope, s in spans if scope == sc.SCOPE_RUNNER]
    assert len(roots) == 4
    for root in roots:
        assert root["name"] == "invoke_workflow sopgym.task"
        assert root["attributes"][sc.GEN_AI_OPERATION] == "invoke_workflow"
        assert root["attributes"][sc.GEN_AI_CONVERSATION_ID]
        assert sc.EPISODE_ID not in root["attributes"]
        events = [e for e in root["events"] if e["name"] == "gen_ai.evaluation.result"]
        names = {e["attributes"]["gen_ai.evaluation.name"] for e in events}
        assert {"output_fields", "tool_calls"} <= names, names
        for event in events:
            label = event["attributes"]["gen_ai.evaluation.score.label"]
            assert label in ("pass", "fail", "not_applicable")
            if label != "not_applicable":
                value = event["attributes"]["gen_ai.evaluation.score.value"]
                assert (value >= 1.0) == (label == "pass")
        assert any("gen_ai.evaluation.explanation" in e["attributes"] for e in events)
    agents = [s for scope, s in spans if scope == sc.SCOPE_AGENT]
    assert {s["name"] for s in agents} == {"invoke_agent react"}
    for agent in agents:
        assert agent["attributes"][sc.GEN_AI_PROVIDER] == "scripted"
        assert agent["attributes"][sc.GEN_AI_CONVERSATION_ID]
        assert sc.EPISODE_ID not in agent["attributes"]
    tools = [s for scope, s in spans if scope == sc.SCOPE_AGENT_TOOLS]
    assert tools and all(
        s["name"] == f"execute_tool {s['attributes'][sc.GEN_AI_TOOL_NAME]}" for s in tools
    )
    gateway = [s for scope, s in spans if scope == sc.SCOPE_GATEWAY]
    assert all(sc.EPISODE_ID not in s["attributes"] for s in gateway)
    assert all(sc.GEN_AI_CONVERSATION_ID in s["attributes"] for s in gateway
               if sc.GATEWAY_OP in s["attributes"])  # fmt: skip


def _rows(folder: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (folder / "results.jsonl").read_bytes().splitlines()]


def _rescored(row: dict[str, Any]) -> dict[str, Any]:
    """A recorded row's score as the runner would record it today (scorers change; the
    gateway's record of the episode does not)."""
    data = dataset.load(load_domain(row["domain"]), DATA_ROOT)
    task = next(t for t in data.tasks if t.id == row["task_id"])
    score = score_episode(data.domain, task, Trajectory.from_json(row["trajectory"]),
                          data.gold[task.id], None, agent_error=row["error"])  # fmt: skip
    return score.to_json()


def test_old_and_new_names_score_identically_and_as_the_records(tmp_path: Path) -> None:
    new = evaluate_path(LATEST, DATA_ROOT)
    # the run's records (the gateway's trajectories in results.jsonl) scored by today's
    # scorers, as the runner scores them: the traces must give the same scores
    records = {row["task_id"]: _rescored(row) for row in _rows(LATEST)}
    assert len(new["per_task"]) == 4 and not new["incomplete"]
    assert {r["task_id"]: r["score"] for r in new["per_task"]} == records
    old = tmp_path / LATEST.name  # (a run folder's name is its run id)
    shutil.copytree(LATEST, old)
    store = old / "traces" / "otlp.jsonl"
    text = store.read_bytes()
    assert text.count(b'"gen_ai.conversation.id"') > 20
    store.write_bytes(text.replace(b'"gen_ai.conversation.id"', b'"sopgym.episode.id"'))
    before = evaluate_path(old, DATA_ROOT)
    for volatile in ("evaluated_at", "seconds", "source"):
        del new[volatile], before[volatile]
    assert before == new


def test_evaluation_events_label_every_verdict() -> None:
    passed = evaluation_attributes("output_fields", {"value": 1.0, "explanation": "all match"})
    assert passed == {
        "gen_ai.evaluation.name": "output_fields",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "all match",
    }
    assert evaluation_attributes("f", {"value": 0.5})["gen_ai.evaluation.score.label"] == "fail"
    missing = evaluation_attributes("graph", {"value": None, "explanation": ""})
    assert missing == {"gen_ai.evaluation.name": "graph",
                       "gen_ai.evaluation.score.label": "not_applicable"}  # fmt: skip


@pytest.mark.parametrize("opted_in", [False, True])
def test_tool_definitions_are_opt_in(monkeypatch: pytest.MonkeyPatch, opted_in: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if opted_in:
        monkeypatch.setenv(sc.CAPTURE_MESSAGES_ENV, "true")
    else:
        monkeypatch.delenv(sc.CAPTURE_MESSAGES_ENV, raising=False)
    tool = {"name": "lookup", "description": "finds", "input_schema": {"type": "object"}}
    with provider.get_tracer("t").start_as_current_span("invoke_agent a") as span:
        genai.record_tool_definitions(span, [tool])
    (finished,) = exporter.get_finished_spans()
    attributes = dict(finished.attributes or {})
    if not opted_in:
        assert sc.GEN_AI_TOOL_DEFINITIONS not in attributes
        return
    assert orjson.loads(str(attributes[sc.GEN_AI_TOOL_DEFINITIONS])) == [
        {"type": "function", "name": "lookup", "description": "finds",
         "parameters": {"type": "object"}}
    ]  # fmt: skip


def test_the_task_root_is_an_invoke_agent_span_under_v0_1_0(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """semantic-conventions-genai v0.1.0 merged the workflow span into ``invoke_agent`` (and
    ``gen_ai.workflow.name`` into ``gen_ai.agent.name``): opted in, the runner's task root is
    the invocation of the agent ``sopgym.task``; by default it stays ``task``."""
    monkeypatch.setenv(sc.STABILITY_OPT_IN_ENV, sc.GEN_AI_LATEST)
    name, attributes = task_root("t-1", "patient_intake", "run", 2)
    assert name == "invoke_agent sopgym.task"
    assert attributes[sc.GEN_AI_OPERATION] == "invoke_agent"
    assert attributes[sc.GEN_AI_AGENT_NAME] == "sopgym.task"
    assert not any("workflow" in str(k) or "workflow" in str(v) for k, v in attributes.items())
    assert attributes[sc.TASK_ID] == "t-1" and attributes[sc.TRIAL] == 2
    monkeypatch.delenv(sc.STABILITY_OPT_IN_ENV)
    name, attributes = task_root("t-1", "patient_intake", "run", 2)
    assert name == "task" and sc.GEN_AI_OPERATION not in attributes


def test_a_task_root_named_invoke_agent_is_not_taken_for_the_agents(tmp_path: Path) -> None:
    """A store written under v0.1.0 has two ``invoke_agent`` spans per episode (the runner's
    root and the agent's): the episode's root is still the agent's (it carries the LLM
    usage), wherever every scope is read (the viewer reads them all)."""
    store = tmp_path / LATEST.name
    shutil.copytree(LATEST, store)
    otlp = store / "traces" / "otlp.jsonl"
    text = otlp.read_bytes()
    assert text.count(b'"invoke_workflow') >= 4
    otlp.write_bytes(text.replace(b'"invoke_workflow', b'"invoke_agent'))
    episodes = [e for e in assemble(load_spans(store / "traces").spans) if e.episode_id]
    assert len(episodes) == 4
    for episode in episodes:
        assert episode.root is not None and episode.root.scope == sc.SCOPE_AGENT

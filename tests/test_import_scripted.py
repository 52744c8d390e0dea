"""The scripted model on imported benchmarks: with no reference policy to script, it plays the
generic baseline policy, so LLM agents on it score exactly what ``--agent baseline`` scores
(never the expected outputs), and the model server never loads a benchmark's tools.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from sopgym.agents.plan import read_plan
from sopgym.agents.prompts import (
    case_message,
    observation,
    plan_request,
    system_prompt,
    tools_catalog_text,
)
from sopgym.cli.imports import import_group
from sopgym.core import dataset
from sopgym.core.answers import ReactAction, extract_final_answer, parse_react
from sopgym.core.import_index import HOME_ENV
from sopgym.importers.bridge import ToolsBridge
from sopgym.importers.resolve import load_imported
from sopgym.services.model.engine import ScriptedModel
from sopgym.services.model.profiles import parse_profile
from sopgym.types import JSON
from tests.sopbench_helpers import (
    FIXTURES,
    TOOLS_LOG_ENV,
    isolated_home,
    loaders_are_services_or_the_import,
    sopgym,
)

NAMES = ("clean", "relayed_outputs")
DOMAINS = [f"sopbench/{n}" for n in NAMES]
RELAYED_TOOLS = ["getOrderDetails", "checkReturnWindow", "decideRefund"]


# ---- the engine, in process ----
@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ScriptedModel:
    """Both fixtures (they share their task inputs) behind one model; tools.py unloadable."""
    isolated_home(tmp_path, monkeypatch)
    for name in NAMES:
        result = CliRunner().invoke(import_group, ["sop-bench", str(FIXTURES / name)])
        assert result.exit_code == 0, result.output

    def refuse(self: ToolsBridge) -> Any:
        raise AssertionError("the model server must not load a benchmark's tools.py")

    monkeypatch.setattr(ToolsBridge, "load", refuse)
    data = [dataset.load(load_imported(d), tmp_path / "data") for d in DOMAINS]
    return ScriptedModel(data, parse_profile("perfect"))


def _opening(model: ScriptedModel, domain: str, react: bool) -> tuple[list[JSON], list[JSON]]:
    """The agents' opening messages for the domain's first task, and its OpenAI tool specs."""
    book = model.books[domain]
    specs = [t.spec.rendered() for t in book.domain.tools]
    catalog = tools_catalog_text(specs) if react else None
    messages = [
        {"role": "system", "content": system_prompt(book.domain.output_schema, catalog)},
        {"role": "user", "content": case_message(book.domain.sop(), book.data.tasks[0].inputs)},
    ]
    return messages, [s["openai"] for s in specs]


def _reply(model: ScriptedModel, messages: list[JSON], tools: list[JSON] | None) -> JSON:
    body: JSON = {"model": "scripted:noisy", "messages": messages}  # profiles do not apply
    if tools:
        body["tools"] = tools
    return model.respond(body)["choices"][0]["message"]


# what the fixture's tools answer for order A-100 (written out: tools.py is not loaded here)
RESULTS = {
    "getOrderDetails": {"item condition": "new", "days since purchase": 10},
    "checkReturnWindow": {"within_window": True, "window days": 30},
    "decideRefund": {"refund_decision": "full"},
}


def test_native_calls_follow_the_generic_policy(model: ScriptedModel) -> None:
    messages, tools = _opening(model, "sopbench/relayed_outputs", react=False)
    made = []
    for _ in range(5):
        message = _reply(model, messages, tools)
        if not message.get("tool_calls"):
            break
        call = message["tool_calls"][0]
        made.append((call["function"]["name"], orjson.loads(call["function"]["arguments"])))
        result = RESULTS[made[-1][0]]
        messages += [
            message,
            {"role": "tool", "tool_call_id": call["id"], "content": orjson.dumps(result).decode()},
        ]
    assert made == [
        ("getOrderDetails", {"order_id": "A-100"}),
        (
            "checkReturnWindow",
            {"order_id": "A-100", "customer_tier": "standard", "days_since_purchase": 10},
        ),
        ("decideRefund", {"order_id": "A-100", "within_window": True, "item_condition": "new"}),
    ]
    assert extract_final_answer(message["content"], ["refund_decision"]) == {
        "refund_decision": "full"
    }


@pytest.mark.parametrize(
    ("domain", "expected", "answer"),
    [
        ("sopbench/clean", RELAYED_TOOLS[:2], {}),
        ("sopbench/relayed_outputs", RELAYED_TOOLS, {"refund_decision": "full"}),
    ],
)
def test_react_reads_observations_and_tells_twin_benchmarks_apart(
    model: ScriptedModel, domain: str, expected: list[str], answer: JSON
) -> None:
    """Both fixtures have the same inputs; the ReAct catalog says which benchmark it is."""
    messages, _ = _opening(model, domain, react=True)
    made = []
    for _ in range(5):
        text = _reply(model, messages, None)["content"]
        step = parse_react(text)
        if not isinstance(step, ReactAction):
            break
        made.append(step.tool)
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": observation(RESULTS[step.tool])},
        ]
    assert made == expected
    assert extract_final_answer(text, ["refund_decision"]) == answer


def test_a_refused_call_is_not_a_source_of_facts(model: ScriptedModel) -> None:
    messages, tools = _opening(model, "sopbench/clean", react=False)
    message = _reply(model, messages, tools)
    refusal = {"error": {"code": "not_found", "message": "No order found", "field": None}}
    messages += [
        message,
        {
            "role": "tool",
            "tool_call_id": message["tool_calls"][0]["id"],
            "content": orjson.dumps(refusal).decode(),
        },
    ]
    final = _reply(model, messages, tools)  # nothing left that can be filled
    assert not final.get("tool_calls") and extract_final_answer(final["content"]) == {}


def test_plan_lists_the_catalog_in_order(model: ScriptedModel) -> None:
    messages, tools = _opening(model, "sopbench/relayed_outputs", react=False)
    messages.append({"role": "user", "content": plan_request()})
    plan = read_plan(_reply(model, messages, tools)["content"])
    assert plan is not None and [s["tool"] for s in plan] == RELAYED_TOOLS


# ---- end to end: `sopgym run` through the real stack ----
@pytest.fixture(scope="module")
def stack_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    root = tmp_path_factory.mktemp("scripted")
    env = {HOME_ENV: str(root / "home"), TOOLS_LOG_ENV: str(root / "imports.log")}
    for name in NAMES:
        done = sopgym(env, "import", "sop-bench", str(FIXTURES / name))
        assert done.returncode == 0, done.stdout + done.stderr
    return env, root


def _run(stack_env: tuple[dict[str, str], Path], agent: str) -> tuple[JSON, dict[str, JSON]]:
    """One run of both fixtures: its summary, and its results by task."""
    env, root = stack_env
    runs = root / "runs"
    done = sopgym(
        env,
        "run",
        *DOMAINS,
        "--agent",
        agent,
        "--model",
        "scripted",
        "--runs-dir",
        str(runs),
        "--run-id",
        agent,
        "--data-root",
        str(root / "data"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    summary = orjson.loads((runs / agent / "summary.json").read_bytes())
    rows = [orjson.loads(x) for x in (runs / agent / "results.jsonl").read_bytes().splitlines()]
    return summary, {r["task_id"]: r for r in rows}


@pytest.fixture(scope="module")
def baseline(stack_env: tuple[dict[str, str], Path]) -> tuple[JSON, dict[str, JSON]]:
    return _run(stack_env, "baseline")


@pytest.mark.parametrize("agent", ["fc", "react"])
def test_scripted_llm_agents_score_what_the_baseline_scores(
    stack_env: tuple[dict[str, str], Path],
    baseline: tuple[JSON, dict[str, JSON]],
    agent: str,
) -> None:
    summary, results = _run(stack_env, agent)
    base_summary, base_results = baseline
    assert (summary["tasks"], summary["completed"]) == (10, 10)
    tsr = {d: summary["domains"][d]["tsr"] for d in DOMAINS}
    assert tsr == {d: base_summary["domains"][d]["tsr"] for d in DOMAINS}
    assert tsr == {"sopbench/clean": 0.0, "sopbench/relayed_outputs": 1.0}
    assert summary["tool_f1"] is None  # no gold calls: tool metrics are n/a
    assert all(summary["domains"][d]["tool_recall"] is None for d in DOMAINS)
    for task_id, row in results.items():
        calls = [(c["name"], c["arguments"]) for c in row["trajectory"]["calls"]]
        expected = [
            (c["name"], c["arguments"]) for c in base_results[task_id]["trajectory"]["calls"]
        ]
        assert calls == expected, task_id
        assert row["outputs"] == base_results[task_id]["outputs"], task_id
    _, root = stack_env
    importers = (root / "imports.log").read_text().splitlines()
    assert loaders_are_services_or_the_import(importers), importers

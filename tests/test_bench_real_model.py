"""bench/bench_real_model.py's table: its figures from results rows (first-step times, the
family score, server-timed speed), and, end to end, two cells of its matrix run against the
scripted model server as against any OpenAI-compatible URL."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import orjson
import pytest

from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command
from tests.helpers import DATA_ROOT

_PATH = Path(__file__).resolve().parents[1] / "bench" / "bench_real_model.py"
_SPEC = importlib.util.spec_from_file_location("bench_real_model", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
bench = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = bench  # dataclasses look their module up there
_SPEC.loader.exec_module(bench)


def _row(latencies: list[float], success: bool, **score: object) -> dict:
    calls = [
        {"latency_s": s, "output_tokens": 10, "error": None, "generated_tokens": 10,
         "generation_s": 0.5}
        for s in latencies
    ]  # fmt: skip
    return {
        "status": "finished",
        "elapsed_s": sum(latencies) + 1.0,
        "llm_calls": calls,
        "score": {
            "success": success,
            "tool_f1": score.get("tool_f1", 1.0),
            "calls": score.get("calls", 0),
            "errors": score.get("errors", {}),
            "scores": {
                "output_fields": {"value": 1.0},
                "answer_schema": {"value": score.get("graded", 1.0)},
            },
        },
    }


def test_figures_split_first_steps_by_task_and_name_each_speed() -> None:
    rows = [
        _row([100.0, 5.0, 7.0], True, calls=2),
        _row([10.0, 5.0], False, graded=0.2, errors={"wrong_final": 1}),
        _row([12.0], True),
    ]
    rows.append({**_row([], False), "status": "failed", "error": "RepeatedAction: stuck"})
    out = bench.figures(rows, 200.0)
    assert out["first_step_s_task1"] == 100.0  # the cold prompt
    assert out["first_step_s_later_tasks"] == 11.0  # the shared prefix from the cache
    assert out["later_step_s"] == round((5.0 + 7.0 + 5.0) / 3, 3)
    assert out["family_scorer"] == "answer_schema"
    assert out["family_score"] == round((1.0 + 0.2 + 1.0 + 1.0) / 4, 3)
    assert out["tsr"] == 0.5 and out["tool_calls"] == 2
    assert out["generation_tokens_per_s"] == 20.0  # the server's timing
    assert out["output_tokens_per_s_of_latency"] == round(60 / 139.0, 2)
    assert out["errors"] == {"failed:RepeatedAction": 1, "wrong_final": 1}
    text = bench.table([{"family": "maze", "agent": "fc", **out}], "after")
    head, rule, line = text.splitlines()
    assert head.count("|") == rule.count("|") == line.count("|")
    assert "| maze | fc | after | 4 | 0.5 | 0.8 (answer_schema) |" in line


def test_figures_count_cached_prompt_tokens_and_answers_that_copy_the_example() -> None:
    """The server's count of prompt tokens processed on the later tasks' first steps (what
    its prefix cache spared), answers that repeat the prompt's example answer, and answers
    given without their tags."""
    from sopgym.agents.prompts import example_answer
    from sopgym.core.registry import load_domain

    example = example_answer(load_domain("patient_intake").output_schema)
    assert example is not None and len(example) >= 3
    first, second, third = (_row([9.0], False) for _ in range(3))
    second["llm_calls"][0] |= {"input_tokens": 2600, "prompt_tokens_processed": 230}
    third["llm_calls"][0] |= {"input_tokens": 2500, "prompt_tokens_processed": 170}
    name = next(iter(example))
    first |= {"domain": "patient_intake", "outputs": dict(example)}  # a copy
    second |= {"domain": "patient_intake", "outputs": {**example, name: "other"}}  # all but one
    third |= {"domain": "patient_intake", "outputs": {k: "other" for k in example}}
    third["untagged_answer"] = True  # the runner's flag: the answer came without its tags
    out = bench.figures([first, second, third], 30.0)
    assert out["untagged_answers"] == 1
    assert out["first_step_prompt_processed_later"] == 200.0
    assert out["first_step_prompt_tokens_later"] == 2550.0
    assert out["example_copied"] == 2
    line = bench.table([{"family": "tool use", "agent": "fc", **out}]).splitlines()[2]
    assert "| 200 of 2,550 |" in line


@pytest.mark.slow
def test_two_cells_against_the_scripted_model_server(tmp_path: Path) -> None:
    port = free_port()
    command = sopgym_command(
        "model-server", "--port", str(port), "--domain", "maze/insurance_claim",
        "--domain", "patient_intake", "--data-root", str(DATA_ROOT),
    )  # fmt: skip
    args = argparse.Namespace(
        python=sys.executable, model="scripted", base_url=f"http://127.0.0.1:{port}/v1",
        limit=2, task_timeout=60.0, run_option=[], capture_messages=True,
    )  # fmt: skip
    with ProcessGroup() as group:
        group.start(
            "model", command, tmp_path / "model.log", ready_url=f"http://127.0.0.1:{port}/readyz"
        ).wait_ready()
        rows = [
            bench.run_cell(args, cell, tmp_path)
            for cell in bench.MATRIX
            if cell.key in ("maze:fc", "tool use:react")
        ]
    maze, tools = rows
    assert (maze["tsr"], maze["family_scorer"], maze["family_score"]) == (1.0, "answer_schema", 1.0)
    assert maze["tool_calls"] == 0 and maze["model_calls"] == 2
    assert tools["tsr"] == 1.0 and tools["tool_calls"] > 0 and tools["tool_f1"] == 1.0
    assert tools["first_step_s_task1"] is not None and tools["later_step_s"] is not None
    assert 0 <= tools["harness_share"] <= 1
    assert len(bench.table(rows).splitlines()) == 4
    assert maze["replies"] == {} and tools["replies"] == {}  # kept for failed tasks only


def test_model_replies_are_read_back_from_captured_messages(tmp_path: Path) -> None:
    """A cell's chat spans (``--capture-messages``) give each episode's replies in the order
    they were made: text as written, a native call as ``name(arguments)``."""

    def span(episode: str, start: int, parts: list[dict]) -> dict:
        output = orjson.dumps([{"role": "assistant", "parts": parts}]).decode()
        attributes = [
            {"key": "gen_ai.conversation.id", "value": {"stringValue": episode}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": output}},
        ]
        return {"name": "chat m", "startTimeUnixNano": str(start), "attributes": attributes}

    spans = [
        span("ep-1", 20, [{"type": "text", "content": "<final_answer>{}</final_answer>"}]),
        span("ep-1", 10, [{"type": "tool_call", "name": "lookup", "arguments": {"id": "R1"}}]),
        {"name": "GET /v1/tools", "attributes": []},
    ]
    line = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    (tmp_path / "otlp-1.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    replies = bench.model_replies(tmp_path)
    assert replies == {"ep-1": ['lookup({"id":"R1"})', "<final_answer>{}</final_answer>"]}


def test_first_replies_are_told_apart_and_the_prompts_differ_as_named() -> None:
    """The prompt probe: each kind of first reply is named, and the variants are what their
    names say (only the last shows a call before the answer's form)."""
    offered, fields = ["lookup"], ["status"]
    kinds = [
        bench.first_reply_kind(message, offered, fields)
        for message in (
            {"content": None, "tool_calls": [{"function": {"name": "lookup"}}]},
            {"content": '<tool_call>{"name": "lookup", "arguments": {}}</tool_call>'},
            {"content": '<final_answer>{"status": "ok"}</final_answer>'},
            {"content": '```json\n{"status": "ok"}\n```'},
            {"content": "I will look it up."},
        )
    ]
    assert kinds == ["native call", "text call", "tagged answer", "untagged answer", "other"]
    tools = [{"name": "lookup", "input_schema": {"properties": {"id": {"type": "string"}}}}]
    variants = bench.prompt_variants({"properties": {"status": {"enum": ["ok", "bad"]}}}, tools)
    before, sentence, after, *_ = variants.values()
    assert "<tool_call>" not in before and "first reply" not in before
    assert "<tool_call>" not in sentence and "first reply is a tool call" in sentence
    assert after.index("<tool_call>") < after.index("<final_answer>{")

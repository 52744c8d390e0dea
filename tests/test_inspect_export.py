"""``sopgym export RUN --format inspect``: a stored real run (4 patient-intake tasks, the ReAct
agent on the scripted model's noisy profile) as an Inspect eval log, read back with Inspect's
own reader: every episode's scores are the run's, exactly, with their explanations; every
recorded tool call is a tool event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from sopgym.cli import main as cli

inspect_log = pytest.importorskip("inspect_ai.log")  # optional: pip install inspect-ai

RUN = Path(__file__).parent / "fixtures" / "traced_run_latest"


def _rows() -> dict[tuple[str, int], dict]:
    rows = map(orjson.loads, (RUN / "results.jsonl").read_bytes().splitlines())
    return {(f"{r['domain']}/{r['task_id']}", r["trial"] + 1): r for r in rows}


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_an_inspect_log_reads_back_with_the_runs_scores(tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"run{suffix}"
    done = CliRunner().invoke(cli, ["export", str(RUN), "--format", "inspect", "--out",
                                    str(target)])  # fmt: skip
    assert done.exit_code == 0, done.output
    log = inspect_log.read_eval_log(str(target))
    rows = _rows()
    assert log.status == "success" and log.samples is not None
    assert len(log.samples) == len(rows) == 4
    successes = 0
    for sample in log.samples:
        row = rows[(str(sample.id), sample.epoch)]
        score = row["score"]
        applicable = {n: r for n, r in score["scores"].items() if r["value"] is not None}
        assert sample.scores is not None
        assert {n: s.value for n, s in sample.scores.items()} == {
            "success": float(score["success"]),
            **{n: r["value"] for n, r in applicable.items()},
        }
        for name, result in applicable.items():
            assert sample.scores[name].explanation == (result["explanation"] or None)
        assert sample.metadata["not_applicable"] == [
            n for n, r in score["scores"].items() if r["value"] is None
        ]
        calls = row["trajectory"]["calls"]
        tools = [e for e in sample.events if e.event == "tool"]
        assert [(e.function, e.error is not None) for e in tools] == [
            (c["name"], c["error_code"] is not None) for c in calls
        ]
        assert isinstance(sample.target, str)
        assert orjson.loads(sample.target) == row["gold_outputs"]
        successes += score["success"]
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == successes / 4


def test_inspect_export_refuses_stdout(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["export", str(RUN), "--format", "inspect", "--out", "-"])
    assert done.exit_code == 2 and "give --out PATH" in done.output


CAPTURED = Path(__file__).parent / "fixtures" / "captured_run"  # fc agent, --capture-messages


def test_captured_model_calls_are_model_events_among_the_tool_events(tmp_path: Path) -> None:
    """A run made with ``--capture-messages`` (its messages are only on its chat spans): each
    model call is a model event with the messages it was sent and what it answered, in the
    order the calls began: a model call that asked for a tool comes before that tool call."""
    target = tmp_path / "captured.eval"
    done = CliRunner().invoke(cli, ["export", str(CAPTURED), "--format", "inspect", "--out",
                                    str(target)])  # fmt: skip
    assert done.exit_code == 0, done.output
    log = inspect_log.read_eval_log(str(target))
    assert log.samples is not None and len(log.samples) == 1
    row = orjson.loads((CAPTURED / "results.jsonl").read_bytes().splitlines()[0])
    # Inspect stores long texts (the system prompt) once, as the sample's attachments
    events = inspect_log.resolve_sample_attachments(log.samples[0], "full").events
    models = [e for e in events if e.event == "model"]
    assert len(models) == len(row["llm_calls"]) == 8
    assert [e.output.usage.input_tokens for e in models] == [
        c["input_tokens"] for c in row["llm_calls"]
    ]
    first = models[0]
    # the tools the agent offered, from its span's gen_ai.tool.definitions
    names = {call["name"] for call in row["trajectory"]["calls"]}
    assert names <= {tool.name for tool in first.tools} and len(first.tools) == 6
    assert all(tool.parameters.properties for tool in first.tools)
    assert [m.role for m in first.input] == ["system", "user"]
    assert "Standard Operating Procedure" in first.input[0].text
    asked = first.output.message.tool_calls
    assert asked is not None and asked[0].function == row["trajectory"]["calls"][0]["name"]
    assert first.output.stop_reason == "tool_calls"
    # the last call's input holds the whole conversation: tool results answer its tool calls
    last = models[-1]
    tools = [m for m in last.input if m.role == "tool"]
    assert len(tools) == len(row["trajectory"]["calls"])
    assert all(m.tool_call_id for m in tools)
    assert "<final_answer>" in last.output.message.text
    # each tool call comes after the model call that asked for it
    kinds = [e.event for e in events if e.event in ("model", "tool")]
    assert kinds[:2] == ["model", "tool"] and kinds[-1] == "model"
    assert kinds.count("tool") == len(row["trajectory"]["calls"])


def test_without_captured_messages_there_are_no_model_events(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    done = CliRunner().invoke(cli, ["export", str(RUN), "--format", "inspect", "--out",
                                    str(target)])  # fmt: skip
    assert done.exit_code == 0, done.output
    log = inspect_log.read_eval_log(str(target))
    assert log.samples is not None
    assert all(e.event != "model" for s in log.samples for e in s.events)
    assert all(s.model_usage for s in log.samples)  # the token counts are still there


def test_messages_cut_to_fit_their_span_are_kept_as_text() -> None:
    """A span attribute cut to its size limit is no longer JSON: the call is still a model
    event, the cut text its one input message, never dropped and never an error."""
    from sopgym.interop.inspect_log import _model_event
    from sopgym.viewer.traces import ChatTurn

    cut = '[{"role":"system","parts":[{"type":"text","content":"You are an oper'
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "done"}],
               "finish_reason": "length"}]  # fmt: skip
    event = _model_event(ChatTurn(0, 2.0, "m", 10, 3, cut, answer), [])
    assert [(m.role, m.text) for m in event.input] == [("user", cut)]
    assert event.output.message.text == "done" and event.output.stop_reason == "max_tokens"
    assert event.output.usage.total_tokens == 13


def _export(run: Path, target: Path) -> Any:
    done = CliRunner().invoke(cli, ["export", str(run), "--format", "inspect", "--out",
                                    str(target)])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert f"inspect view --log-dir {target.parent}" in done.output  # a command that works
    return inspect_log.read_eval_log(str(target))


def test_a_captured_runs_samples_show_the_conversation_answer_and_tokens(tmp_path: Path) -> None:
    """The viewer's Messages tab, Answer column and token counts: every sample of a
    ``--capture-messages`` run has the conversation its model last saw, the model's answer
    as its output, the agent's answer on its scores, and its tokens (also in the stats)."""
    log = _export(CAPTURED, tmp_path / "captured.eval")
    row = orjson.loads((CAPTURED / "results.jsonl").read_bytes().splitlines()[0])
    assert log.samples
    for sample in log.samples:
        sample = inspect_log.resolve_sample_attachments(sample, "full")
        assert sample.metadata["messages"] == "captured"
        roles = [m.role for m in sample.messages]
        assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
        assert roles.count("tool") == len(row["trajectory"]["calls"])
        assert "<final_answer>" in sample.output.completion
        answer = orjson.loads(str(sample.scores["success"].answer))
        assert answer == row["outputs"]
        usage = sample.model_usage[row["model"]]
        assert usage.input_tokens == sum(c["input_tokens"] for c in row["llm_calls"]) > 0
    total = log.stats.model_usage[row["model"]]
    assert total.total_tokens == sum(c["input_tokens"] + c["output_tokens"]
                                     for c in row["llm_calls"]) > 0  # fmt: skip


def test_without_captured_messages_the_conversation_is_rebuilt_from_the_calls(
    tmp_path: Path,
) -> None:
    """No ``--capture-messages``: each sample's messages are the episode's steps in the
    function-calling form (the SOP and the case, each recorded call and what it answered, a
    refusal as its error, the final answer), said so in its metadata."""
    log = _export(RUN, tmp_path / "run.eval")
    rows = _rows()
    assert log.samples
    for sample in log.samples:
        sample = inspect_log.resolve_sample_attachments(sample, "full")
        row = rows[(str(sample.id), sample.epoch)]
        assert sample.metadata["messages"] == "rebuilt"
        assert [m.role for m in sample.messages[:2]] == ["system", "user"]
        assert "<sop>" in sample.messages[1].text and "<case_input>" in sample.messages[1].text
        calls = row["trajectory"]["calls"]
        tools = [m for m in sample.messages if m.role == "tool"]
        assert [m.function for m in tools] == [c["name"] for c in calls]
        for message, call in zip(tools, calls, strict=True):
            if call["error_code"]:
                assert call["error_code"] in message.text
        if row["outputs"] is not None:
            assert orjson.loads(str(sample.scores["success"].answer)) == row["outputs"]
            assert "<final_answer>" in sample.output.completion
        assert sample.model_usage[row["model"]].total_tokens > 0


def test_two_runs_of_one_domain_are_told_apart(tmp_path: Path) -> None:
    """Task args and tags name the run, model, agent, SOP variant and seed."""
    one, two = _export(RUN, tmp_path / "one.eval"), _export(CAPTURED, tmp_path / "two.eval")
    assert one.eval.task == two.eval.task == "sopgym/patient_intake"
    for log, run in ((one, RUN), (two, CAPTURED)):
        config = orjson.loads((run / "config.json").read_bytes())
        assert log.eval.task_args == {
            "run_id": run.name, "agent": config["agent"], "model": config["model"],
            "sop_variant": config["sop_variant"], "seed": config["seed"],
            "trials": config["trials"],
        }  # fmt: skip
        assert f"run_id:{run.name}" in log.eval.tags and f"agent:{config['agent']}" in log.eval.tags
        assert run.name in str(log.eval.task_display_name)
    assert one.eval.task_display_name != two.eval.task_display_name

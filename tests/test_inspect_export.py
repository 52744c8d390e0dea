"""``sopgym export RUN --format inspect``: a stored real run (4 patient-intake tasks, the ReAct
agent on the scripted model's noisy profile) as an Inspect eval log, read back with Inspect's
own reader: every episode's scores are the run's, exactly, with their explanations; every
recorded tool call is a tool event."""

from __future__ import annotations

from pathlib import Path

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
    from sopgym.evaluation.inspect_log import _model_event
    from sopgym.viewer.traces import ChatTurn

    cut = '[{"role":"system","parts":[{"type":"text","content":"You are an oper'
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "done"}],
               "finish_reason": "length"}]  # fmt: skip
    event = _model_event(ChatTurn(0, 2.0, "m", 10, 3, cut, answer), [])
    assert [(m.role, m.text) for m in event.input] == [("user", cut)]
    assert event.output.message.text == "done" and event.output.stop_reason == "max_tokens"
    assert event.output.usage.total_tokens == 13

"""SOP-Maze's own protocol (``--protocol paper``): the prompt as published is the one user
message (no system prompt of ours, no JSON wrapping), the reply is read with the official
scorer's leniency (json-repair, the first complete object), and the run's config records it;
and the oracle scores 1.0 on every scorable imported item through real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from sopgym.agents import graph
from sopgym.cli.agent_options import collect_agent_options
from sopgym.core.tasks import Task
from sopgym.evaluation.maze_protocol import paper_prompt, parse_reply

RAW = Path(__file__).parent / "fixtures" / "sopmaze" / "raw_data"
GOOD = Path(__file__).parent / "fixtures" / "sopmaze" / "good"


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ('{"step": "2.1"}', {"step": "2.1"}),
        ("```json\n{'step': '2.1', 'reply': 'ok',}\n```", {"step": "2.1", "reply": "ok"}),
        ('Sure: {"step": "3"} and also {"note": "x"}', {"step": "3"}),  # the first object
        ('{"step": "1", "reply": "cut off', {"step": "1", "reply": "cut off"}),  # truncated
        ('[{"step": "2"}]', {"step": "2"}),
        ("no object at all", None),
        ("", None),
    ],
)
def test_replies_are_read_as_the_official_scorer_reads_them(reply: str, answer: Any) -> None:
    assert parse_reply(reply) == answer


def test_the_prompt_is_sent_as_published_and_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    prompt = "## SOP\n1. 问候。\n2. 结束。\n\n## 输出要求\n只输出 JSON。"
    sent: list[list[Any]] = []

    def invoke(llm: Any, messages: list[Any], context: Any, purpose: str) -> AIMessage:
        sent.append(messages)
        return AIMessage("好的：```json\n{'step': '2',}\n```")

    monkeypatch.setattr(graph.model_calls, "invoke_model", invoke)
    task = Task("t", "sopmaze/x", {"prompt": prompt}, kind="json_answer")
    assert graph.answer_as_published(object(), task, object()) == {"step": "2"}  # type: ignore[arg-type]
    assert len(sent[0]) == 1 and isinstance(sent[0][0], HumanMessage)
    assert sent[0][0].content == prompt  # real newlines, no JSON wrapping
    assert paper_prompt({"prompt": prompt, "other": 1}) is None  # not a prompt-only task
    assert collect_agent_options({"protocol": "paper"}) == {"paper_protocol": 1}
    assert collect_agent_options({"protocol": "default"}) == {"paper_protocol": 0}


def sopgym(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SOPGYM_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "sopgym", *args], capture_output=True,
                          text=True, timeout=400, env=env)  # fmt: skip


def test_the_oracle_scores_one_on_every_scorable_item_and_the_report_has_the_papers_table(
    tmp_path: Path,
) -> None:
    home, runs = tmp_path / "home", tmp_path / "runs"
    assert sopgym(home, "import", "sop-maze", str(RAW)).returncode == 0
    result = sopgym(home, "run", "sopmaze", "--agent", "oracle", "--runs-dir", str(runs),
                    "--run-id", "o")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = orjson.loads((runs / "o" / "summary.json").read_bytes())
    figures = summary["paper"]["sop_maze"]
    assert figures["scorable"]["overall"] == 1.0 and figures["scorable"]["items"] == 22
    assert figures["tally"] == {"1.0": 22, "0.2": 0, "0": 0, "n/a": 1}
    assert figures["scorable"]["shape_average"] == {"HRS": 1.0, "LRS": 1.0}
    assert figures["scenarios"]["sopmaze/7cbec017"]["shape"] == "unknown"
    assert figures["all_items"]["overall"] == 22 / 23
    report = sopgym(home, "report", str(runs / "o"))
    assert report.returncode == 0, report.stderr[-3000:]
    assert "SOP-Maze, as the paper reports it" in (runs / "o" / "report.md").read_text()


@pytest.mark.slow
def test_a_paper_protocol_run_records_it_and_reads_the_replies(tmp_path: Path) -> None:
    home, runs = tmp_path / "home", tmp_path / "runs"
    assert sopgym(home, "import", "sop-maze", str(GOOD)).returncode == 0
    result = sopgym(home, "run", "sopmaze/*", "--agent", "fc", "--protocol", "paper",
                    "--runs-dir", str(runs), "--run-id", "p")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    config = orjson.loads((runs / "p" / "config.json").read_bytes())
    assert config["agent_options"]["paper_protocol"] == 1
    summary = orjson.loads((runs / "p" / "summary.json").read_bytes())
    assert summary["tasks"] == summary["completed"] == 5  # every reply was found and read

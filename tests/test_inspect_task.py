"""sopgym inside ``inspect eval``: Inspect's own command line, run from the venv as a user runs
it, plays patient-intake tasks through the embedded stack with the scripted model provider
(offline), and the log it writes has sopgym's scorers under their own names with the values
and explanations ``score_episode`` gives the gateway's record of each episode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from sopgym.core.registry import DOMAIN_PACKAGES_ENV
from sopgym.evaluation.scorers import scorers_for
from tests.helpers import DATA_ROOT, domain_data

inspect_log = pytest.importorskip("inspect_ai.log")  # in the test extra

INSPECT = Path(sys.executable).parent / "inspect"
DOMAIN = "patient_intake"


def _inspect(*args: str, log_dir: Path) -> subprocess.CompletedProcess[str]:
    # as a user runs it: no PYTHONPATH to the checkout (there, setuptools' egg-info would
    # hide the editable install Inspect reads the package's namespace from) and no test packs
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", DOMAIN_PACKAGES_ENV)}
    env.update({"SOPGYM_DATA": str(DATA_ROOT), "INSPECT_DISPLAY": "plain"})
    return subprocess.run(
        [str(INSPECT), *args, "--log-dir", str(log_dir)],
        env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


@pytest.mark.slow  # a subprocess eval over the embedded stack: about a minute on a busy machine
def test_inspect_eval_plays_sopgym_tasks_and_scores_them_with_sopgyms_scorers(
    tmp_path: Path,
) -> None:
    done = _inspect("eval", "sopgym/sopgym_task", "-T", f"domain={DOMAIN}", "-T", "limit=3",
                    "--model", "sopgym/scripted", log_dir=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = list(tmp_path.glob("*.eval"))
    log = inspect_log.read_eval_log(str(path))
    assert log.status == "success" and log.samples is not None and log.results is not None
    assert log.eval.task == "sopgym/sopgym_task" and log.eval.model == "sopgym/scripted"
    data = domain_data(DOMAIN)
    tasks = data.tasks[:3]
    assert [s.id for s in log.samples] == [t.id for t in tasks]
    names = {s.name for t in data.tasks for s in scorers_for(data.domain, t)}
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert set(metrics) == {"success", *names}
    assert metrics["success"]["accuracy"].value == 1.0
    for sample in log.samples:
        assert sample.scores is not None
        success = sample.scores["success"]
        assert success.value == 1.0 and success.explanation
        answer = orjson.loads(str(success.answer))
        assert answer == data.gold[str(sample.id)].outputs  # the oracle-equivalent's answer
        applicable = {n: s for n, s in sample.scores.items() if n != "success"}
        assert applicable and all(s.value == 1.0 and s.explanation for s in applicable.values())
        # the conversation the model had: the SOP and the case, every tool call and result
        roles = [m.role for m in sample.messages]
        assert roles[:2] == ["system", "user"] and "tool" in roles
        assert "<sop>" in sample.messages[1].text
        assert sample.output.completion and sample.model_usage


@pytest.mark.parametrize(
    ("task_arg", "model", "said"),
    [
        ("domain=no_such_domain", "sopgym/scripted", "unknown domain 'no_such_domain'"),
        ("sop_variant=fancy", "sopgym/scripted", "no SOP variant 'fancy'"),
        ("limit=1", "sopgym/scripted:bogus=1", "unknown error kind 'bogus'"),
    ],
)
def test_a_wrong_argument_is_refused_in_one_line(
    tmp_path: Path, task_arg: str, model: str, said: str
) -> None:
    done = _inspect("eval", "sopgym/sopgym_task", "-T", task_arg, "--model", model,
                    log_dir=tmp_path)  # fmt: skip
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert said in text.replace("\n", " ") and "Traceback" not in text
    assert not list(tmp_path.glob("*.eval"))  # nothing ran


def test_the_inspect_bridge_passes_tool_choice_in_openai_words() -> None:
    """A solver that forces a call (Inspect's ``"any"``, or a named function) reaches the
    scripted model as OpenAI's ``tool_choice``, which it obeys (issue 48)."""
    from inspect_ai.model import ChatMessage, ChatMessageUser, GenerateConfig
    from inspect_ai.tool import ToolFunction, ToolInfo, ToolParams

    from sopgym.interop.inspect_model import completion_body

    tools = [ToolInfo(name="lookup", description="Look a record up.", parameters=ToolParams())]
    messages: list[ChatMessage] = [ChatMessageUser(content="hi")]

    def choice(given: Any) -> object:
        return completion_body("m", messages, tools, GenerateConfig(), given)["tool_choice"]

    assert choice("any") == "required" and choice("auto") == "auto"
    named = {"type": "function", "function": {"name": "lookup"}}
    assert choice(ToolFunction(name="lookup")) == named
    assert "tool_choice" not in completion_body("m", messages, [], GenerateConfig(), "any")

"""Agents from anywhere: the registry ours register into, plug-ins under the ``sopgym.agents``
entry-point group, ``--agent module:Class``; and the example agent run end to end, traced and
recorded like ours. (The contract test that runs every agent is test_agent_contract.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from sopgym.agents import (
    AGENTS,
    UnknownAgent,
    agent_names,
    class_factory,
    make_agent,
    resolve_agent,
    uses_model,
)
from sopgym.cli import main
from tests.helpers import DATA_ROOT, domain_data
from tests.plugin_helpers import write_distribution

EXAMPLE = "examples.my_agent:MyAgent"
ROOT = Path(__file__).resolve().parent.parent


class Options:
    name = "options"

    def __init__(self, model: str, max_steps: int = 3) -> None:
        self.model, self.max_steps = model, max_steps

    def solve(self, task: Any, episode: Any, context: Any) -> Any:
        return {}


def test_ours_are_registered_with_whether_they_use_a_model() -> None:
    assert {"oracle", "fc", "react", "plan", "mcp", "oneshot", "baseline"} <= set(AGENTS)
    assert not uses_model("oracle") and not uses_model("baseline") and uses_model("fc")
    assert make_agent("oracle").name == "oracle"


def test_a_class_by_module_and_name_is_loaded_and_given_only_the_options_it_takes() -> None:
    entry = resolve_agent(EXAMPLE)
    assert entry.name == EXAMPLE and entry.uses_model is False and not uses_model(EXAMPLE)
    agent = make_agent(EXAMPLE, model="scripted", max_steps=4)  # it takes no option at all
    assert agent.name == "my-agent"
    made = class_factory(Options)(model="m", max_steps=9, temperature=0.5, base_url="x")
    assert isinstance(made, Options) and (made.model, made.max_steps) == ("m", 9)


def test_a_plug_in_under_the_entry_point_group_is_an_agent_by_its_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_distribution(tmp_path, "their_agents", {"sopgym.agents": {
        "opts": f"{__name__}:Options", "broken": "no_module_x:Agent"}})  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))  # installed: importlib.metadata finds it
    assert {"opts", "broken", "oracle"} <= set(agent_names())
    made: Any = make_agent("opts", model="m")
    assert isinstance(made, Options)
    with pytest.raises(UnknownAgent, match="agent plug-in 'broken': cannot load: No module named"):
        resolve_agent("broken")


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("nobody", "unknown agent 'nobody' (known: "),
        ("examples.nothing_here:Agent", "cannot load: No module named 'examples.nothing_here'"),
        ("examples.my_agent:Missing", "cannot load: module 'examples.my_agent' has no attribute"),
        ("tests.test_agent_registry:ROOT", "not a class or factory of agents"),
        ("pathlib:Path", "Path has no solve(task, episode, "),
    ],
)
def test_what_is_no_agent_is_refused_with_why(spec: str, said: str) -> None:
    with pytest.raises(UnknownAgent) as refused:
        resolve_agent(spec)
    assert said in str(refused.value)


def test_sopgym_run_refuses_an_agent_it_cannot_load_before_anything_starts(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", "patient_intake", "--agent", "examples.nope:X",
                                       "--runs-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 2 and "cannot load" in result.output, result.output
    assert not any(tmp_path.iterdir())


def test_the_example_agent_runs_end_to_end_traced_and_recorded_like_ours(tmp_path: Path) -> None:
    domain_data("patient_intake")
    result = subprocess.run(
        [sys.executable, "-m", "sopgym", "run", "patient_intake", "--agent", EXAMPLE,
         "--limit", "2", "--workers", "1", "--runs-dir", str(tmp_path), "--run-id", "mine",
         "--data-root", str(DATA_ROOT), "--task-timeout", "60"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    run = tmp_path / "mine"
    rows = [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["agent"] == EXAMPLE and row["status"] == "finished", row["error"]
        assert row["trajectory"]["calls"] and row["score"]["tool_f1"] > 0  # it used the tools
    config = orjson.loads((run / "config.json").read_bytes())
    assert config["agent"] == EXAMPLE
    spans = b"".join(p.read_bytes() for p in (run / "traces").rglob("*") if p.is_file())
    assert b"my-agent" in spans  # the episode's root span names the agent, as ours
    evaluated = subprocess.run(
        [sys.executable, "-m", "sopgym", "eval", str(run), "--data-root", str(DATA_ROOT)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stdout[-2000:] + evaluated.stderr[-2000:]

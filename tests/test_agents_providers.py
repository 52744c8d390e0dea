"""Every provider end to end offline: the agents talk to the scripted model server through
``langchain-anthropic`` (Anthropic Messages) and ``langchain-aws`` (Bedrock Converse over
boto3), each provider's own client library, with dummy credentials and no network beyond
loopback. The perfect profile solves every task; on the noisy one each injected mistake shows
up in its evaluator category. Also: the scripted model's small-model behaviours through a
whole run (``guesser``, ``stubborn``, plan shapes), and the command line's agent options
reaching the agents."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command
from tests.helpers import DATA_ROOT
from tests.test_agents_e2e import DOMAIN, _rows, _run, _summary

pytest.importorskip("langchain_anthropic")
pytest.importorskip("langchain_aws")

NOISY = "scripted:missing_arg=0.15,bad_type=0.1,hallucinated_tool=0.1,wrong_final=0.2,seed="
OFFLINE = {  # dummy credentials: the scripted server checks none, and nothing leaves loopback
    "ANTHROPIC_API_KEY": "offline",
    "AWS_ACCESS_KEY_ID": "offline",
    "AWS_SECRET_ACCESS_KEY": "offline",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="module")
def model_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One scripted model server for the module, logging what it injects."""
    folder = tmp_path_factory.mktemp("model")
    port = free_port()
    log = folder / "injections.jsonl"
    command = sopgym_command(
        "model-server",
        "--port",
        str(port),
        "--domain",
        DOMAIN,
        "--data-root",
        str(DATA_ROOT),
        "--injection-log",
        str(log),
    )
    with ProcessGroup() as group:
        group.start(
            "model", command, folder / "model.log", ready_url=f"http://127.0.0.1:{port}/readyz"
        ).wait_ready()
        yield f"http://127.0.0.1:{port}", log


def _env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **OFFLINE}


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
@pytest.mark.parametrize("agent", ["fc", "react", "plan"])
def test_each_provider_client_solves_every_task_on_the_perfect_model(
    provider: str, agent: str, model_url: tuple[str, Path], tmp_path: Path
) -> None:
    args = ["--agent", agent, "--model", f"{provider}:scripted", "--base-url", model_url[0]]
    result = _run(tmp_path, *args, "--limit", "4", "--no-trace", env=_env())
    assert result.returncode == 0, result.stderr[-3000:]
    summary = _summary(tmp_path)
    assert (summary["tsr"], summary["tasks"], summary["errors"]) == (1.0, 4, {}), summary
    calls = [c for r in _rows(tmp_path) for c in r["llm_calls"]]
    assert calls and all(c["model"] == f"{provider}:scripted" for c in calls)
    assert all(c["input_tokens"] > 0 and c["output_tokens"] > 0 for c in calls)
    assert summary["llm"]["all"]["calls"] == len(calls)


@pytest.mark.slow
@pytest.mark.parametrize(("provider", "seed"), [("anthropic", 3), ("bedrock", 4)])
def test_each_provider_client_classifies_a_noisy_models_errors(
    provider: str, seed: int, model_url: tuple[str, Path], tmp_path: Path
) -> None:
    url, log = model_url  # a seed per provider: the server logs each mistake once
    before = log.read_bytes().splitlines() if log.exists() else []
    args = ["--agent", "fc", "--model", f"{provider}:{NOISY}{seed}", "--base-url", url]
    result = _run(tmp_path, *args, "--limit", "12", "--no-trace", env=_env())
    assert result.returncode == 0, result.stderr[-3000:]
    injected: dict[str, list[dict]] = {}
    for line in log.read_bytes().splitlines()[len(before) :]:
        record = orjson.loads(line)
        injected.setdefault(record["task_id"], []).append(record)
    assert injected  # the profile did inject mistakes
    for row in _rows(tmp_path):
        expected = Counter(c for r in injected.get(row["task_id"], []) for c in r["expected"])
        assert row["status"] == "finished", row["error"]
        assert Counter(row["score"]["errors"]) == expected, (row["task_id"], injected)


@pytest.mark.slow
def test_a_guessing_model_is_corrected_and_flagged(tmp_path: Path) -> None:
    # not forced to call (the default forces the first tool turn): the corrective turn's case
    args = ["--agent", "fc", "--model", "scripted:guesser", "--limit", "4", "--tool-choice", "auto"]
    result = _run(tmp_path, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = _summary(tmp_path)
    assert summary["tsr"] == 1.0 and summary["answered_without_tools"] == 4, summary
    for row in _rows(tmp_path):
        assert row["score"]["answered_without_tools"] and row["score"]["tool_f1"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["plan_xml", "plan_list", "plan_prose"])
def test_plans_in_other_shapes_through_a_whole_run(shape: str, tmp_path: Path) -> None:
    args = ["--agent", "plan", "--model", f"scripted:{shape}=1", "--limit", "3", "--no-trace"]
    result = _run(tmp_path, *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert _summary(tmp_path)["tsr"] == 1.0


@pytest.mark.slow
def test_cli_agent_options_reach_the_agent_and_a_stuck_model_is_stopped(tmp_path: Path) -> None:
    """The stubborn model repeats each refused call: with --agent-option max_repeats=2 every
    task stops after two identical calls, long before --max-steps."""
    args = ["--agent", "react", "--model", "scripted:stubborn", "--limit", "2", "--no-trace"]
    options = ["--max-steps", "30", "--max-tokens", "256", "--agent-option", "max_repeats=2",
               "--verbose"]  # fmt: skip
    result = _run(tmp_path, *args, *options)
    assert result.returncode == 0, result.stderr[-3000:]
    config = orjson.loads((tmp_path / "r" / "config.json").read_bytes())
    assert config["agent_options"] == {"max_repeats": 2, "max_tokens": 256, "max_steps": 30}
    for row in _rows(tmp_path):
        assert row["status"] == "failed" and "2 times in a row" in row["error"], row["error"]
        assert len(row["llm_calls"]) == 2
    log = (tmp_path / "r" / "logs" / "worker-0.log").read_text()
    assert "step task=" in log and " latency=" in log  # per-step progress in the worker log
    assert "step task=" in result.stderr  # and on screen: --verbose, output not a terminal

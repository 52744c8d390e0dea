"""The one plug-in registry (sopgym/core/plugins.py), as a user meets it: their own module in a
folder of their own, an installed package's entry points (a real ``.dist-info`` that
``importlib.metadata`` finds), and ``sopgym`` run from that folder without ``PYTHONPATH``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from sopgym.agents import resolve_agent
from sopgym.client.transports import transport
from sopgym.core import registry
from sopgym.core.errors import UnknownDomainError
from sopgym.core.plugins import Plugins
from sopgym.evaluation.external import READER_PLUGINS, ScoreRefused
from sopgym.evaluation.profiles import PROFILE_PLUGINS
from sopgym.evaluation.scorers import SCORER_PLUGINS, UnknownScorer, scorers_for
from tests.helpers import DATA_ROOT, domain_data
from tests.plugin_helpers import write_distribution

MAZE = "maze/telecom_requests"  # answer-only: scored from the answers alone, no tools
MODULE = "their_plugins"  # the user's own module, in their folder
# One plug-in of each kind, in the user's module
USER_MODULE = '''\
"""A user's own plug-ins, one of each kind."""

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from sopgym.client import GatewayClient
from sopgym.core.registry import load_domain
from sopgym.core.scorer import Score, Scorer
from sopgym.evaluation.external import Response, Unreadable
from sopgym.evaluation.profiles import PaperProfile

HERE = Path(__file__).parent


class TabAnswers:
    name = "tab-answers"
    help = "task_id, a tab, the answer as JSON, per line"

    def read(self, path):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            task_id, _, answer = line.partition("\\t")
            where = f"{path.name}:{number}"
            if answer:
                yield Response(task_id, where, answer=orjson.loads(answer))
            else:
                yield Unreadable(where, "no answer after the tab")


class StepOne:
    name = "step-one"
    uses_model = False

    def solve(self, task, episode, context):
        return {"step": "1.1"}


class CountingClient(GatewayClient):
    """The HTTP client, noting each episode it opens in the user's folder."""

    def open(self, *args, **kwargs):
        with (HERE / "opened.log").open("a") as log:
            log.write("opened\\n")
        return super().open(*args, **kwargs)


def calls_made(gates=False):
    return Scorer("calls_made", lambda case: Score(float(len(case.trajectory.calls))), gates)


LENIENT = PaperProfile(lambda *episode: {"correct": True}, lambda episodes: {"n": len(episodes)})
MIRROR = replace(load_domain("maze/telecom_requests"), name="mirror")
'''
# Their installed package's entry points: one of each kind, under names of its own
ENTRY_POINTS = {
    "sopgym.agents": {"their-agent": f"{MODULE}:StepOne"},
    "sopgym.readers": {"their-format": f"{MODULE}:TabAnswers"},
    "sopgym.scorers": {"their-scorer": f"{MODULE}:calls_made"},
    "sopgym.profiles": {"their-profile": f"{MODULE}:LENIENT"},
    "sopgym.transports": {"their-transport": f"{MODULE}:CountingClient"},
    "sopgym.domains": {"mirror": f"{MODULE}:MIRROR", "misnamed": f"{MODULE}:MIRROR"},
}


@pytest.fixture
def user_folder(tmp_path: Path) -> Path:
    """The user's folder: their module and their package's ``.dist-info``."""
    (tmp_path / f"{MODULE}.py").write_text(USER_MODULE)
    write_distribution(tmp_path, "their_plugins", ENTRY_POINTS)
    return tmp_path


@pytest.fixture
def installed(user_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's folder on ``sys.path`` here, as an installed package is."""
    monkeypatch.syspath_prepend(str(user_folder))
    registry._modules.cache_clear()
    yield user_folder
    registry._modules.cache_clear()
    sys.modules.pop(MODULE, None)


def test_an_entry_point_of_each_kind_is_found_by_its_name(installed: Path) -> None:
    assert resolve_agent("their-agent").factory().name == "step-one"
    assert READER_PLUGINS.resolve("their-format").name == "tab-answers"
    assert SCORER_PLUGINS.resolve("their-scorer").name == "calls_made"
    assert PROFILE_PLUGINS.resolve("their-profile").aggregate([("d", {})]) == {"n": 1}
    assert transport("their-transport").client == f"{MODULE}:CountingClient"
    assert "mirror" in registry.domain_names()
    assert registry.load_domain("mirror").title == registry.load_domain(MAZE).title
    with pytest.raises(UnknownDomainError, match=f"domain misnamed: {MODULE}:MIRROR is the pack"):
        registry.load_domain("misnamed")  # an entry's name is its pack's
    kinds: list[Plugins[Any]] = [READER_PLUGINS, SCORER_PLUGINS, PROFILE_PLUGINS]
    for plugins in kinds:  # listed beside ours, so an unknown name's refusal shows them
        assert any(name.startswith("their-") for name in plugins.names())


def test_a_module_that_fails_to_import_is_one_line_saying_how(installed: Path) -> None:
    (installed / "exploding.py").write_text('raise RuntimeError("boom")\n')
    try:
        with pytest.raises(ScoreRefused, match=r"^format exploding:Reader: cannot load: "
                                               r"RuntimeError: boom$"):  # fmt: skip
            READER_PLUGINS.resolve("exploding:Reader")
        with pytest.raises(UnknownDomainError, match="cannot load exploding:PACK: RuntimeError"):
            registry.load_domain("exploding:PACK")
    finally:
        sys.modules.pop("exploding", None)


def test_a_pack_names_its_scorers_by_name_entry_point_or_module(installed: Path) -> None:
    data = domain_data(MAZE)
    pack = registry.load_domain(MAZE)
    for theirs in ("their-scorer", f"{MODULE}:calls_made"):
        chosen = scorers_for(replace(pack, scorers=["output_fields", theirs]), data.tasks[0])
        assert [s.name for s in chosen] == ["output_fields", "calls_made"]
    misspelt = replace(pack, scorers=["output_feilds"])
    with pytest.raises(UnknownScorer, match=r"'output_feilds' \(did you mean output_fields\?"):
        scorers_for(misspelt, data.tasks[0])


def _user_env() -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH, no test packs."""
    drop = {"PYTHONPATH", registry.DOMAIN_PACKAGES_ENV}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _sopgym(folder: Path, *args: str, script: bool = False) -> subprocess.CompletedProcess[str]:
    """``sopgym ARGS`` run in ``folder`` as a user runs it: the installed ``sopgym`` script
    (which, unlike ``python -m``, does not look in the current folder) or ``python -m``."""
    launcher = [str(Path(sys.executable).parent / "sopgym")] if script else [
        sys.executable, "-m", "sopgym"]  # fmt: skip
    return subprocess.run([*launcher, *args], cwd=folder, env=_user_env(), capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip


def _answers(folder: Path) -> Path:
    """Three tab-separated answers: two right, one wrong, and a line with none."""
    data = domain_data(MAZE)
    ids = [t.id for t in data.tasks[:3]]
    gold = [data.gold[i].outputs for i in ids]
    wrong = {**gold[2], "step": "1.13" if gold[2]["step"] != "1.13" else "1.12"}
    lines = [f"{ids[0]}\t{orjson.dumps(gold[0]).decode()}",
             f"{ids[1]}\t{orjson.dumps(gold[1]).decode()}",
             f"{ids[2]}\t{orjson.dumps(wrong).decode()}", "no-tab-here"]  # fmt: skip
    path = folder / "answers.tsv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("format_name", "script"), [(f"{MODULE}:TabAnswers", True), ("their-format", False)]
)
def test_sopgym_score_reaches_a_reader_in_the_users_own_module(
    user_folder: Path, format_name: str, script: bool
) -> None:
    _answers(user_folder)
    result = _sopgym(user_folder, "score", MAZE, "--responses", "answers.tsv", "--format",
                     format_name, "--limit", "3", "--run-id", "theirs", "--data-root",
                     str(DATA_ROOT), script=script)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    summary = orjson.loads((user_folder / "runs" / "theirs" / "summary.json").read_bytes())
    assert (summary["tasks"], summary["correct"]) == (3, 2)
    assert summary["responses"]["unreadable"] == 1 and summary["responses"]["format"] == format_name


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["score", MAZE, "--responses", "answers.tsv", "--format", "jsnl"],
         "unknown format 'jsnl' (did you mean jsonl? known: jsonl, sopmaze, their-format; or "
         "module:attr)"),
        (["score", MAZE, "--responses", "answers.tsv", "--format", f"{MODULE}:Missing"],
         f"format {MODULE}:Missing: cannot load: module '{MODULE}' has no attribute 'Missing'"),
        (["run", MAZE, "--transport", "htp"],
         "unknown transport 'htp' (did you mean http? known: grpc, http, mcp, their-transport"),
        (["run", MAZE, "--agent", "orcale"], "unknown agent 'orcale' (did you mean oracle? known:"),
    ],
)  # fmt: skip
def test_an_unknown_name_is_one_line_naming_the_known_ones(
    user_folder: Path, args: list[str], said: str
) -> None:
    _answers(user_folder)
    result = _sopgym(user_folder, *args, "--data-root", str(DATA_ROOT))
    assert result.returncode == 2, result.stdout + result.stderr
    assert said in " ".join((result.stdout + result.stderr).split())
    assert "Traceback" not in result.stderr and not (user_folder / "runs").exists()


def test_a_domain_by_entry_point_or_module_and_attribute_is_listed(user_folder: Path) -> None:
    # the entry point (python -m sees the folder's .dist-info); module:attr by the script,
    # which sees no entry point there: the module alone makes the pack
    for named, script in [("mirror", False), (f"{MODULE}:MIRROR", True)]:
        listed = _sopgym(user_folder, "list", named, "--data-root", str(DATA_ROOT), script=script)
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert "│ mirror │ answer-only │ 226 " in listed.stdout, listed.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "transport_name"),
    [(f"{MODULE}:StepOne", "http"), ("their-agent", f"{MODULE}:CountingClient")],
)
def test_a_run_reaches_the_users_agent_and_transport_from_their_folder(
    user_folder: Path, agent: str, transport_name: str
) -> None:
    """The agent workers start in an empty folder of their own: they get the user's import
    path, so a plug-in found here is found there too."""
    result = _sopgym(user_folder, "run", MAZE, "--agent", agent, "--transport", transport_name,
                     "--limit", "2", "--workers", "1", "--run-id", "mine", "--data-root",
                     str(DATA_ROOT), "--task-timeout", "120", script=True)  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    run = user_folder / "runs" / "mine"
    rows = [orjson.loads(line) for line in (run / "results.jsonl").read_bytes().splitlines()]
    assert [row["status"] for row in rows] == ["finished", "finished"], rows[0]["error"]
    assert all(row["agent"] == agent for row in rows)
    opened = user_folder / "opened.log"
    if transport_name != "http":  # the user's client opened each episode, in the worker
        assert opened.read_text().count("opened") == 2
    else:
        assert not opened.exists()


def test_own_outputs_reader_example_runs_as_written(tmp_path: Path) -> None:
    """docs/own-outputs.md's reader: its file written out from the page, its commands run as
    written in a fresh folder, without PYTHONPATH."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "own-outputs.md").read_text()
    section = page.split("## Another format: a reader")[1].split("\n## ")[0]
    blocks = re.findall(r"^```(\w+)\n(.*?)^```", section, re.S | re.M)
    python = next(body for language, body in blocks if language == "python")
    name, _, code = python.partition("\n")
    (tmp_path / name.removeprefix("# ")).write_text(code)
    commands = next(body for language, body in blocks if language == "bash").splitlines()
    env = {**_user_env(), "SOPGYM_DATA": str(DATA_ROOT)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, timeout=300,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    (run,) = (tmp_path / "runs").iterdir()
    summary = orjson.loads((run / "summary.json").read_bytes())
    assert summary["tasks"] == 2 and summary["responses"]["format"] == "csv_steps:CsvSteps"
    assert (summary["responses"]["scored"], summary["responses"]["unreadable"]) == (1, 1)

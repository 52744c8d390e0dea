"""docs/house.md's worked examples (a domain pack, a scorer, an agent, a response reader, a
transport) are real: each file the page shows is written out from the page, and each command it
shows is run as written, in a fresh folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sopgym.core.registry import DOMAIN_PACKAGES_ENV

ROOT = Path(__file__).resolve().parents[1]
HOUSE = ROOT / "docs" / "house.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
# the first line of a block that is a file: "# path" (Python) or "<!-- path -->" (Markdown)
FILE_MARK = re.compile(r"^(?:# |<!-- )([\w./]+\.(?:py|md))(?: -->)?$")


def _examples() -> tuple[dict[str, str], list[str]]:
    """The files (path -> text) and the shell commands (in page order) of the worked examples."""
    files: dict[str, str] = {}
    commands: list[str] = []
    for language, body in FENCE.findall(HOUSE.read_text(encoding="utf-8")):
        first, _, rest = body.partition("\n")
        mark = FILE_MARK.match(first)
        if mark and language in ("python", "markdown"):
            files[mark.group(1)] = rest
        elif language == "bash":
            joined = body.replace("\\\n", " ")
            commands += [line.strip() for line in joined.splitlines()
                         if line.strip() and not line.lstrip().startswith("#")]  # fmt: skip
    return files, commands


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def test_every_kind_of_extension_has_a_worked_example() -> None:
    files, commands = _examples()
    assert {"mypacks/__init__.py", "mypacks/refunds/__init__.py", "mypacks/refunds/sop.md",
            "mypacks/refunds/sop_noisy.md", "mypacks/scorers.py", "mypacks/agents.py",
            "mypacks/readers.py", "mypacks/over_counted.py",
            "mypacks/profiles.py"} <= set(files)  # fmt: skip
    for name, text in files.items():
        if name.endswith(".py"):
            compile(text, name, "exec")  # a syntax error in the page fails here, fast
    assert "concurrent_safe = True" in files["mypacks/agents.py"]
    assert any("--agent oracle" in command for command in commands)
    assert any("--agent mypacks.agents:RefundDesk" in command for command in commands)
    assert any("--format mypacks.readers:CsvDecisions" in command for command in commands)
    assert any("--transport mypacks.over_counted:" in command for command in commands)


@pytest.mark.slow
def test_the_worked_examples_run_as_written(tmp_path: Path) -> None:
    files, commands = _examples()
    _write(tmp_path, files)
    # a user's shell: sopgym on PATH, no PYTHONPATH (their folder is found as `python -m` would)
    # and none of the suite's test packs
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", DOMAIN_PACKAGES_ENV)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    outputs = []
    for command in commands:
        # the pack checks run in the checkout (its tests/, with the user's folder on the path),
        # the rest in the user's own folder
        checks = "tests/" in command
        folder, path = (ROOT, {"PYTHONPATH": str(tmp_path)}) if checks else (tmp_path, {})
        result = subprocess.run(["bash", "-c", command], cwd=folder, env={**env, **path},
                                timeout=240, capture_output=True, text=True,
                                check=False)  # fmt: skip
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
        outputs.append(result.stdout)
    assert any("refunds" in output for output in outputs)  # sopgym list found the pack
    pack_checks = next(output for command, output in zip(commands, outputs, strict=True)
                       if "test_domain_packs" in command)  # fmt: skip
    assert re.search(r"\b[1-9]\d* passed", pack_checks) and "failed" not in pack_checks

    oracle = orjson.loads((tmp_path / "runs" / "pack" / "summary.json").read_bytes())
    assert (oracle["tasks"], oracle["tsr"]) == (12, 1.0)
    assert oracle["scores"]["single_lookup"] == 1.0  # the pack's own scorer ran on every task
    assert oracle["scores"]["answered"] == 1.0  # and the one it names by module:attr
    assert oracle["paper"]["mypacks.profiles:DESK_MANUAL"] == {"accuracy": 1.0}  # its profile
    desk = orjson.loads((tmp_path / "runs" / "desk" / "summary.json").read_bytes())
    assert (desk["tasks"], desk["tsr"], desk["config"]["agent"]) == (
        12, 1.0, "mypacks.agents:RefundDesk")
    assert desk["config"]["concurrency"] == 8

    theirs = orjson.loads((tmp_path / "runs" / "theirs" / "summary.json").read_bytes())
    assert theirs["tasks"] == 12 and theirs["correct"] == 1  # refunds-000 right, 001 wrong
    assert theirs["responses"]["unreadable"] == 1  # refunds-002's line without a decision
    counted = orjson.loads((tmp_path / "runs" / "counted" / "summary.json").read_bytes())
    assert (counted["tasks"], counted["tsr"]) == (12, 1.0)
    assert counted["config"]["transport"] == "mypacks.over_counted:CountingGatewayClient"
    assert "opened 1 calls 1" in outputs[-1]  # the counting transport opened the episode

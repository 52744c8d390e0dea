"""``sopgym export --format inspect`` opened in Inspect's own viewer (``inspect view --log-dir``,
on loopback) in a headless Debian chromium: the sample shows the agent's answer, and its
Messages tab the conversation (the system prompt, the SOP and case, the tool results), not
"No messages". ``SOPGYM_SCREENSHOTS=docs/images pytest -m slow tests/test_inspect_view.py``
photographs the Messages tab for the docs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest
from click.testing import CliRunner

from sopgym.cli import main as cli
from sopgym.orchestration.processes import free_port

pytest.importorskip("inspect_ai")
CAPTURED = Path(__file__).parent / "fixtures" / "captured_run"  # fc agent, --capture-messages
INSPECT = Path(sys.executable).parent / "inspect"


@pytest.mark.slow
def test_inspect_view_shows_the_conversation_and_the_answer(
    tmp_path: Path, browser: object
) -> None:
    done = CliRunner().invoke(cli, ["export", str(CAPTURED), "--format", "inspect", "--out",
                                    str(tmp_path / "captured.eval")])  # fmt: skip
    assert done.exit_code == 0, done.output
    command = done.output.splitlines()[-1].removeprefix("open it with: ").split()
    assert command[:3] == ["inspect", "view", "--log-dir"]  # the command the export prints
    port = free_port()
    viewer = subprocess.Popen(
        [str(INSPECT), "view", *command[2:], "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=1.0)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "inspect view did not start"
                time.sleep(0.3)
        page = browser.new_page(viewport={"width": 1100, "height": 720})  # type: ignore[attr-defined]
        page.goto(url)
        row = orjson.loads((CAPTURED / "results.jsonl").read_bytes().splitlines()[0])
        page.get_by_text("Answer", exact=True).first.wait_for(timeout=30_000)
        text = page.inner_text("body")
        assert orjson.dumps(row["outputs"], option=orjson.OPT_SORT_KEYS).decode() in text
        page.get_by_text("Messages", exact=True).first.click()
        page.get_by_text("<sop>", exact=False).first.wait_for(timeout=30_000)
        text = page.inner_text("body")
        assert "No messages" not in text
        assert "Standard Operating Procedure" in text and "<case_input>" in text
        shots = os.environ.get("SOPGYM_SCREENSHOTS")
        if shots:
            target = Path(shots) / "inspect-view-messages.png"
            page.screenshot(path=str(target))
            _shrink(target)
        page.close()
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)


def _shrink(path: Path) -> None:
    """A screenshot for the docs, kept small: 64 colours."""
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(64).save(path, optimize=True)

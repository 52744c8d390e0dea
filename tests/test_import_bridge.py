"""The bridge to a benchmark's tools.py: dispatch styles and how results and errors translate."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from sopgym.core.errors import ToolError
from sopgym.importers.bridge import ToolsBridge, ToolsLoadError, error_for, json_value


def bridge(tmp_path: Path, source: str, tools: list[str]) -> ToolsBridge:
    (tmp_path / "tools.py").write_text(source)
    return ToolsBridge(tmp_path, tools)


def test_methods_named_after_tools_are_called_with_checked_arguments(tmp_path: Path) -> None:
    tools = bridge(
        tmp_path,
        "class Helper:\n    pass\n\n"
        "class LookupManager:\n"
        "    def lookup(self, order_id):\n        return {'order': order_id}\n"
        "    def status(self, order_id):\n        return 'open'\n",
        ["lookup", "status", "missing"],
    )
    assert tools.serve("lookup", {"order_id": "A"}) == {"order": "A"}
    assert tools.serve("status", {"order_id": "A"}) == {"value": "open"}  # bare value wrapped
    with pytest.raises(ToolError) as refused:
        tools.serve("lookup", {"order_id": "A", "extra": 1})
    assert (refused.value.code, refused.value.field) == ("unexpected_argument", "extra")
    with pytest.raises(ToolError) as refused:
        tools.serve("lookup", {})
    assert (refused.value.code, refused.value.field) == ("missing_argument", "order_id")
    assert not tools.implements("missing")


def test_module_level_functions_and_neighbour_imports(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("PREFIX = 'id-'\n")
    tools = bridge(
        tmp_path,
        "from helper import PREFIX\n\ndef lookup(x):\n    return {'id': PREFIX + x}\n",
        ["lookup"],
    )
    assert tools.serve("lookup", {"x": "1"}) == {"id": "id-1"}


def test_tools_py_that_cannot_load(tmp_path: Path) -> None:
    with pytest.raises(ToolsLoadError, match="ZeroDivisionError"):
        bridge(tmp_path, "1 / 0\n", ["t"]).load()
    with pytest.raises(ToolsLoadError, match="no class"):
        bridge(tmp_path, "X = 1\n", ["t"]).load()


def test_errors_and_values_translate() -> None:
    assert error_for("t", ValueError("No data found for id 3")).code == "not_found"
    assert error_for("t", ValueError("Incorrect root causes")).code == "invalid_value"
    assert error_for("t", RuntimeError("boom")).code == "internal_error"
    assert json_value({"n": np.int64(3), "x": float("nan"), "a": np.array([1, 2])}) == {
        "n": 3,
        "x": None,
        "a": [1, 2],
    }


HANGS_AND_DRAWS = """
import random, threading, time
import numpy as np

release = threading.Event()

def settle_batch():
    release.wait(60)  # hangs (until the test ends)
    return {"settled": True}

def spot_check(order_id):
    first = random.random()
    time.sleep(0.05)  # another call's draws land here when the generators are shared
    return {"order_id": order_id, "draws": [first, random.random(), int(np.random.randint(1e9))]}
"""


def test_a_hung_call_holds_nothing_the_other_calls_need(tmp_path: Path) -> None:
    """Issue 41, point 5: 40 calls that never return, then healthy calls of the same benchmark
    still answer at once, and two at the same time draw exactly what each draws alone."""
    tools = bridge(tmp_path, HANGS_AND_DRAWS, ["settle_batch", "spot_check"])
    module = tools.load()
    alone = {o: tools.serve("spot_check", {"order_id": o}) for o in ("A", "B")}
    with ThreadPoolExecutor(44) as pool:
        try:
            hung = [pool.submit(tools.serve, "settle_batch", {}) for _ in range(40)]
            together = {o: pool.submit(tools.serve, "spot_check", {"order_id": o}) for o in "AB"}
            answers = {o: call.result(timeout=10) for o, call in together.items()}
            assert not any(call.done() for call in hung)  # still hanging meanwhile
        finally:
            module.release.set()
    assert answers == alone
    assert alone["A"] != alone["B"]  # the draws do differ by call

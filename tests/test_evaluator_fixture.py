"""The evaluator's whole output on a stored real traced run, pinned: 8 patient-intake tasks
played by the ReAct agent on the scripted model's ``noisy`` profile, with one agent root span
and one call span removed (two incomplete episodes, with their reasons) and two lines of a
scope the evaluator skips kept. A faster reader or scorer that changes any figure fails here;
regenerate ``expected.json`` (``evaluate_path`` without ``evaluated_at``, ``seconds`` and
``source``) only for an intended change of the output."""

from __future__ import annotations

from pathlib import Path

import orjson

from sopgym.evaluation.evaluator import evaluate_path
from tests.helpers import DATA_ROOT

FIXTURE = Path(__file__).parent / "fixtures" / "traced_run"


def test_a_stored_traced_run_evaluates_to_its_pinned_output() -> None:
    result = evaluate_path(FIXTURE, DATA_ROOT)
    for volatile in ("evaluated_at", "seconds", "source"):
        del result[volatile]
    expected = orjson.loads((FIXTURE / "expected.json").read_bytes())
    assert orjson.loads(orjson.dumps(result)) == expected
    assert result["spans"] == 73 and result["tasks"] == 8 and len(result["incomplete"]) == 2

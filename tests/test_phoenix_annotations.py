"""Our ``gen_ai.evaluation.result`` events as Arize Phoenix span annotations
(:mod:`sopgym.observability.phoenix`), from the stored run written under the latest GenAI
conventions: one annotation per event, on the span that carries it, with the scorer's score
(none where the scorer does not apply), label and explanation. Where arize-phoenix is
installed, Phoenix's own request model for ``POST /v1/span_annotations`` accepts them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from sopgym.evaluation.sources import trace_files
from sopgym.observability import semconv as sc
from sopgym.observability.otlp import read_spans
from sopgym.observability.phoenix import span_annotations

RUN = Path(__file__).parent / "fixtures" / "traced_run_latest"


def _annotations() -> list[dict]:
    return span_annotations(read_spans(trace_files(RUN)).spans)


def test_each_evaluation_event_is_an_annotation_on_its_span() -> None:
    spans = read_spans(trace_files(RUN)).spans
    roots = {s.span_id: s for s in spans if not s.parent_id}
    annotations = _annotations()
    rows = [orjson.loads(line) for line in (RUN / "results.jsonl").read_bytes().splitlines()]
    # every scorer of every episode, each once, on its task's root span
    assert len(annotations) == sum(len(r["score"]["scores"]) for r in rows) == 24
    assert {a["span_id"] for a in annotations} == set(roots)
    by_episode = {r["episode_id"]: r["score"]["scores"] for r in rows}
    for annotation in annotations:
        root = roots[annotation["span_id"]]
        scores = by_episode[str(sc.episode_of(root.attributes))]
        expected = scores[annotation["name"]]
        assert annotation["annotator_kind"] == "CODE"
        assert annotation["result"]["score"] == expected["value"]  # None where not applicable
        assert annotation["result"]["explanation"] == (expected["explanation"] or None)
        if expected["value"] is None:
            assert annotation["result"]["label"] == "not_applicable"


def test_phoenix_accepts_the_annotations() -> None:
    spans_router = pytest.importorskip("phoenix.server.api.routers.v1.spans")
    body = spans_router.AnnotateSpansRequestBody.model_validate({"data": _annotations()})
    assert len(body.data) == 24
    assert all(len(a.span_id) == 16 for a in body.data)  # OTLP's hex span ids


@pytest.mark.slow
def test_phoenix_shows_the_annotations_on_the_trace_tree() -> None:
    """``bench/check_phoenix.py`` end to end against a real Phoenix on loopback: the agent and
    tool spans are classified as such and the 4 task roots carry the 24 annotations."""
    import subprocess
    import sys

    from sopgym.orchestration.processes import free_port

    pytest.importorskip("phoenix")
    script = Path(__file__).parent.parent / "bench" / "check_phoenix.py"
    done = subprocess.run(
        [sys.executable, str(script), "--port", str(free_port()), "--deadline", "240"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (listening,) = [line for line in done.stdout.splitlines() if "Phoenix listens on" in line]
    addresses = listening.split(": ", 1)[1].split()
    assert len(addresses) == 2  # HTTP and OTLP/gRPC, both on loopback only
    assert all(a.rsplit(":", 1)[0] in ("127.0.0.1", "[::ffff:127.0.0.1]") for a in addresses)
    assert "sent 24 annotations" in done.stdout
    assert "spans with annotations: 4" in done.stdout
    assert "invoke_agent     -> agent    4" in done.stdout
    assert "execute_tool     -> tool     23" in done.stdout

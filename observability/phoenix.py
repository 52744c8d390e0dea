"""Our evaluations as Arize Phoenix annotations.

Phoenix keeps a span's OTLP events as events: it shows an evaluation only when it is sent to
its annotation API (``POST /v1/span_annotations``, body ``{"data": [...]}``, one record per
annotation: ``span_id`` in hex, ``name``, ``annotator_kind``, ``result`` with ``label`` /
``score`` / ``explanation``, ``metadata``). This module turns each ``gen_ai.evaluation.result``
event of a trace store into one such record on the span that carries it (the task's root
span), so a run shows in Phoenix with its scores beside the agent → tool tree. Plain data:
sending it is the caller's business (``bench/check_phoenix.py``), so sopgym needs no Phoenix
client.
"""

from __future__ import annotations

from collections.abc import Iterable

from sopgym.observability import semconv as sc
from sopgym.observability.otlp import SpanRecord
from sopgym.types import JSON

ANNOTATOR_KIND = "CODE"  # Phoenix's kinds: LLM, CODE, HUMAN; our scorers are code


def span_annotations(spans: Iterable[SpanRecord]) -> list[JSON]:
    """One Phoenix span annotation per ``gen_ai.evaluation.result`` event, in span order. A
    scorer that does not apply keeps its label (``not_applicable``) and has no score: Phoenix's
    score is optional, and an absent value must not read as 0."""
    annotations: list[JSON] = []
    for span in spans:
        for name, attributes in span.events():
            if name != sc.EVENT_EVALUATION_RESULT:
                continue
            score = attributes.get(sc.GEN_AI_EVALUATION_SCORE_VALUE)
            annotations.append(
                {
                    "span_id": span.span_id,
                    "name": str(attributes.get(sc.GEN_AI_EVALUATION_NAME, "evaluation")),
                    "annotator_kind": ANNOTATOR_KIND,
                    "result": {
                        "label": attributes.get(sc.GEN_AI_EVALUATION_SCORE_LABEL),
                        "score": None if score is None else float(score),
                        "explanation": attributes.get(sc.GEN_AI_EVALUATION_EXPLANATION),
                    },
                    "metadata": {"source": sc.EVENT_EVALUATION_RESULT, "trace_id": span.trace_id},
                }
            )
    return annotations

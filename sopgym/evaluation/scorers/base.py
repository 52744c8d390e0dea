"""The scorer API's types and helpers, kept importable from here; they live in
:mod:`sopgym.core.scorer` (a domain pack declares its scorers, so the types sit beside the pack
in core, below evaluation: no core <-> evaluation circle)."""

from sopgym.core.scorer import TASK_SCHEMA, UNJUDGED, Case, Score, Scorer, f1, listed, ratio

__all__ = ["TASK_SCHEMA", "UNJUDGED", "Case", "Score", "Scorer", "f1", "listed", "ratio"]

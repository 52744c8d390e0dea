"""Family figures worked out from a run's results rows (the viewer's run page and the end of
``sopgym run``), where the evaluator works them out from traces."""

from __future__ import annotations

from collections.abc import Iterable

from sopgym.evaluation.two_stage import FAMILY, two_stage
from sopgym.types import JSON


def teller_view(rows: Iterable[JSON]) -> JSON | None:
    """TELLER's two-stage view of a run's banking rows (None when it has none)."""
    banking = [r for r in rows if str(r.get("domain", "")).startswith(FAMILY)]
    return two_stage([{**r, "agent_model": f"{r.get('agent')}/{r.get('model') or '?'}"}
                      for r in banking])  # fmt: skip

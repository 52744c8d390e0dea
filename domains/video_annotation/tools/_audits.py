"""The QC audit record of a clip, shared by the three quality-control measurements."""

from typing import Any

from sopgym.core.tools import ToolContext, not_found

AUDIT_SAMPLE_MAX = 50  # auditors re-draw at most this many boxes or masks per clip


def audit(ctx: ToolContext, video_id: str) -> dict[str, Any]:
    row = ctx.tables.row("qc_audits", "video_id", video_id)
    if row is None:
        raise not_found("QC audit", "video_id", video_id)
    return row

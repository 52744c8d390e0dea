"""Review metadata of a flagged video: reports and the automated classifier's scores."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.video_classification.tools._common import (
    CATEGORIES,
    INTEGER,
    NUMBER,
    STRING,
    VIDEO_ID,
)

_SCORES = {
    "type": ["object", "null"],
    "properties": {name: NUMBER for name in CATEGORIES},
    "required": CATEGORIES,
}


@tool(
    name="get_review_metadata",
    description=(
        "Fetch the review metadata of a flagged video: uploader, duration, views, number of "
        "user reports, the automated classifier's status and per-category scores (0-1; null "
        "unless the classifier completed) and the content fingerprint."
    ),
    input_schema=arguments_schema({"video_id": VIDEO_ID}),
    output_schema=result_schema(
        {
            "video_id": STRING,
            "uploader_id": STRING,
            "title": STRING,
            "duration_s": INTEGER,
            "view_count": INTEGER,
            "report_count": INTEGER,
            "classifier_status": {"type": "string", "enum": ["complete", "failed", "timed_out"]},
            "classifier_scores": _SCORES,
            "content_fingerprint": STRING,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "videos", "video_id", args["video_id"])
    complete = row["classifier_status"] == "complete"
    return {
        "video_id": row["video_id"],
        "uploader_id": row["uploader_id"],
        "title": row["title"],
        "duration_s": row["duration_s"],
        "view_count": row["view_count"],
        "report_count": row["report_count"],
        "classifier_status": row["classifier_status"],
        "classifier_scores": row["classifier_scores"] if complete else None,
        "content_fingerprint": row["content_fingerprint"],
    }

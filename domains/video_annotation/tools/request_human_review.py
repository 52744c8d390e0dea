"""Human review: a panel of three reviewers scores the annotations from 1 to 5."""

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, not_found, result_schema, tool
from sopgym.domains.video_annotation.tools._common import (
    DETECTION_RUN_ID,
    NUMBER,
    STRING,
    VIDEO_ID,
    parse_detection_run,
)

TIERS = {"standard": "STD", "expert": "EXP"}


@tool(
    name="request_human_review",
    description=(
        "Send a clip's annotations (its detection run) to a review panel of the requested "
        "tier. Each of the three reviewers returns a quality score from 1.0 to 5.0."
    ),
    input_schema=arguments_schema(
        {
            "video_id": VIDEO_ID,
            "detection_run_id": DETECTION_RUN_ID,
            "review_tier": {"type": "string", "enum": list(TIERS)},
        }
    ),
    output_schema=result_schema(
        {
            "review_id": STRING,
            "review_tier": STRING,
            "reviewer_ids": {"type": "array", "items": STRING},
            "reviewer_scores": {"type": "array", "items": NUMBER},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    detection = parse_detection_run(ctx, args["detection_run_id"])
    if detection.video["video_id"] != args["video_id"]:
        raise ToolError(
            "invalid_value", "detection_run_id belongs to another video", "detection_run_id"
        )
    tier = args["review_tier"]
    panel = ctx.tables.row("review_panels", "panel_key", f"{args['video_id']}/{tier}")
    if panel is None:
        raise not_found("review panel", "video_id", args["video_id"])
    return {
        "review_id": f"RV-{args['video_id']}-{TIERS[tier]}",
        "review_tier": tier,
        "reviewer_ids": panel["reviewer_ids"],
        "reviewer_scores": panel["reviewer_scores"],
    }

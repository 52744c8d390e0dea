"""Attach policy-category tags to a video's moderation record."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.video_classification.tools._common import (
    CATEGORIES,
    INTEGER,
    STRING,
    VIDEO_ID,
    receipt,
)


@tool(
    name="apply_moderation_tags",
    description="Attach one or more policy-category tags to a video's moderation record.",
    input_schema=arguments_schema(
        {
            "video_id": VIDEO_ID,
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": CATEGORIES},
                "minItems": 1,
                "uniqueItems": True,
            },
        }
    ),
    output_schema=result_schema({"tag_record_id": STRING, "tag_count": INTEGER}),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "videos", "video_id", args["video_id"])
    tags = sorted(args["tags"])
    return {"tag_record_id": receipt("TAG", args["video_id"], *tags), "tag_count": len(tags)}

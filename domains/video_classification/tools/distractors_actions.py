"""Enforcement tools outside the SOP's authority.

Suspending accounts, demonetising, geo-blocking or messaging the uploader are real actions of
the platform, but this SOP never takes them: the only enforcement it records is the final
action on the video itself.
"""

from sopgym.core.tools import JSON, ToolContext, tool
from sopgym.domains.video_classification.tools._common import (
    BOOLEAN,
    INTEGER,
    STRING,
    UPLOADER_ID,
    VIDEO_ID,
    arguments,
    receipt,
    result,
    uploader,
    video,
)

EXAMPLE_VIDEO = {"video_id": "UV20000000"}
_RECEIPT = result({"receipt_id": STRING, "applied": BOOLEAN})


def _applied(prefix: str, *parts: object) -> JSON:
    return {"receipt_id": receipt(prefix, *parts), "applied": True}


@tool(
    name="notify_uploader",
    description="Send the uploader a templated message about their video.",
    input_schema=arguments(
        {
            "video_id": VIDEO_ID,
            "template": {"type": "string", "enum": ["policy_reminder", "under_review"]},
        },
        example={**EXAMPLE_VIDEO, "template": "under_review"},
    ),
    output_schema=_RECEIPT,
)
def notify_uploader(args: JSON, ctx: ToolContext) -> JSON:
    video(ctx, args["video_id"])
    return _applied("MSG", args["video_id"], args["template"])


@tool(
    name="suspend_uploader_account",
    description="Suspend an uploader's account for a number of days.",
    input_schema=arguments(
        {"uploader_id": UPLOADER_ID, "days": {"type": "integer", "minimum": 1, "maximum": 365}},
        example={"uploader_id": "U-500000", "days": 7},
    ),
    output_schema=_RECEIPT,
)
def suspend_uploader_account(args: JSON, ctx: ToolContext) -> JSON:
    uploader(ctx, args["uploader_id"])
    return _applied("SUS", args["uploader_id"], args["days"])


@tool(
    name="demonetize_video",
    description="Turn off advertising revenue on a video.",
    input_schema=arguments({"video_id": VIDEO_ID}, example=EXAMPLE_VIDEO),
    output_schema=_RECEIPT,
)
def demonetize_video(args: JSON, ctx: ToolContext) -> JSON:
    video(ctx, args["video_id"])
    return _applied("DMN", args["video_id"])


@tool(
    name="geo_block_video",
    description="Block a video in the given countries (ISO 3166 alpha-2 codes).",
    input_schema=arguments(
        {
            "video_id": VIDEO_ID,
            "region_codes": {
                "type": "array",
                "items": {"type": "string", "pattern": "^[A-Z]{2}$"},
                "minItems": 1,
            },
        },
        example={**EXAMPLE_VIDEO, "region_codes": ["DE"]},
    ),
    output_schema=_RECEIPT,
)
def geo_block_video(args: JSON, ctx: ToolContext) -> JSON:
    video(ctx, args["video_id"])
    return _applied("GEO", args["video_id"], *sorted(args["region_codes"]))


@tool(
    name="add_to_watchlist",
    description="Put an uploader on the trust-and-safety watchlist for proactive review.",
    input_schema=arguments(
        {"uploader_id": UPLOADER_ID, "reason": {"type": "string", "minLength": 3}},
        example={"uploader_id": "U-500000", "reason": "repeat reports"},
    ),
    output_schema=_RECEIPT,
)
def add_to_watchlist(args: JSON, ctx: ToolContext) -> JSON:
    uploader(ctx, args["uploader_id"])
    return _applied("WCH", args["uploader_id"], args["reason"])


@tool(
    name="estimate_viral_risk",
    description="Projected views over the next 48 hours, for prioritising proactive sweeps.",
    input_schema=arguments({"video_id": VIDEO_ID}, example=EXAMPLE_VIDEO),
    output_schema=result({"projected_views_48h": INTEGER}),
)
def estimate_viral_risk(args: JSON, ctx: ToolContext) -> JSON:
    return {"projected_views_48h": video(ctx, args["video_id"])["view_count"] * 3}


ACTION_DISTRACTORS = [
    notify_uploader,
    suspend_uploader_account,
    demonetize_video,
    geo_block_video,
    add_to_watchlist,
    estimate_viral_risk,
]

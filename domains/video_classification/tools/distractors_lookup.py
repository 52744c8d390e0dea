"""Look-up tools beside the moderation SOP that it never needs.

Transcripts, OCR, analytics and similar-video search are useful to an investigator, and the
legacy metadata endpoint still answers, but none of them feeds the SOP's triage or decision
rules; an agent that calls them is not following the procedure.
"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.video_classification.tools._common import (
    BOOLEAN,
    CATEGORIES,
    INTEGER,
    LANGUAGES,
    NUMBER,
    STRING,
    UPLOADER_ID,
    VIDEO_ID,
)

EXAMPLE_VIDEO = {"video_id": "UV20000000"}
EXAMPLE_UPLOADER = {"uploader_id": "U-500000"}


@tool(
    name="get_review_metadata_v1",
    description=(
        "Deprecated v1 review endpoint: a single blended risk score and a flagged bit. "
        "Superseded by get_review_metadata."
    ),
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema({"risk_score": NUMBER, "flagged": BOOLEAN}),
)
def get_review_metadata_v1(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "videos", "video_id", args["video_id"])
    scores = row["classifier_scores"] or {}
    blended = sum(scores.values()) / len(scores) if scores else 0.0
    return {"risk_score": round(blended, 3), "flagged": row["report_count"] > 0}


@tool(
    name="transcribe_audio",
    description="Speech-to-text of the video's audio track (first 200 characters).",
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema({"transcript_excerpt": STRING, "language": STRING}),
)
def transcribe_audio(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "videos", "video_id", args["video_id"])
    return {
        "transcript_excerpt": f"[speech] {row['title'].lower()} ...",
        "language": row["language"],
    }


@tool(
    name="detect_language",
    description="Detect the spoken language of a video.",
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema({"language": STRING, "confidence": NUMBER}),
)
def detect_language(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "videos", "video_id", args["video_id"])
    return {"language": row["language"], "confidence": 0.97}


@tool(
    name="run_ocr_on_frames",
    description="Read on-screen text from sampled frames of a video.",
    input_schema=arguments_schema(
        {"video_id": VIDEO_ID, "max_frames": {"type": "integer", "minimum": 1, "maximum": 50}},
        examples=[{**EXAMPLE_VIDEO, "max_frames": 10}],
    ),
    output_schema=result_schema({"frames_read": INTEGER, "text_snippets": {"type": "array"}}),
)
def run_ocr_on_frames(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "videos", "video_id", args["video_id"])
    return {"frames_read": args["max_frames"], "text_snippets": [row["title"]]}


@tool(
    name="get_video_thumbnail",
    description="URL of the video's current thumbnail image.",
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema({"thumbnail_url": STRING}),
)
def get_video_thumbnail(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "videos", "video_id", args["video_id"])
    return {"thumbnail_url": f"https://img.example-video.test/{row['video_id']}/hq.jpg"}


@tool(
    name="get_channel_analytics",
    description="Audience analytics of an uploader's channel (subscribers, average views).",
    input_schema=arguments_schema({"uploader_id": UPLOADER_ID}, examples=[EXAMPLE_UPLOADER]),
    output_schema=result_schema({"subscribers": INTEGER, "average_views": INTEGER}),
)
def get_channel_analytics(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "uploaders", "uploader_id", args["uploader_id"])
    return {"subscribers": row["subscribers"], "average_views": row["subscribers"] // 4}


@tool(
    name="search_similar_videos",
    description="Find visually similar videos by embedding distance.",
    input_schema=arguments_schema(
        {"video_id": VIDEO_ID, "limit": {"type": "integer", "minimum": 1, "maximum": 20}},
        examples=[{**EXAMPLE_VIDEO, "limit": 5}],
    ),
    output_schema=result_schema({"similar_video_ids": {"type": "array", "items": STRING}}),
)
def search_similar_videos(args: JSON, ctx: ToolContext) -> JSON:
    row = require_row(ctx, "videos", "video_id", args["video_id"])
    base = int(row["video_id"][2:])
    return {"similar_video_ids": [f"UV{base + 7919 * k:08d}" for k in range(1, args["limit"] + 1)]}


@tool(
    name="compute_text_toxicity",
    description="Toxicity score (0-1) of a piece of text such as a title or comment.",
    input_schema=arguments_schema(
        {
            "text": {"type": "string", "minLength": 1, "maxLength": 2000},
            "language": {"type": "string", "enum": ["auto", *LANGUAGES]},
        },
        required=["text"],
        examples=[{"text": "what a great ride today"}],
    ),
    output_schema=result_schema({"toxicity": NUMBER}),
)
def compute_text_toxicity(args: JSON, ctx: ToolContext) -> JSON:
    rude = sum(word in args["text"].lower() for word in ("hate", "kill", "idiot", "stupid"))
    return {"toxicity": min(1.0, 0.05 + 0.3 * rude)}


@tool(
    name="translate_text",
    description="Machine-translate a short text into a target language.",
    input_schema=arguments_schema(
        {
            "text": {"type": "string", "minLength": 1, "maxLength": 2000},
            "target_language": {"type": "string", "pattern": "^[a-z]{2}$"},
        },
        examples=[{"text": "hola", "target_language": "en"}],
    ),
    output_schema=result_schema({"translated_text": STRING, "target_language": STRING}),
)
def translate_text(args: JSON, ctx: ToolContext) -> JSON:
    return {
        "translated_text": f"[{args['target_language']}] {args['text']}",
        "target_language": args["target_language"],
    }


@tool(
    name="get_community_guidelines",
    description="Summary and link of the community guideline for one policy category.",
    input_schema=arguments_schema(
        {"category": {"type": "string", "enum": CATEGORIES}}, examples=[{"category": "violence"}]
    ),
    output_schema=result_schema({"summary": STRING, "policy_url": STRING}),
)
def get_community_guidelines(args: JSON, ctx: ToolContext) -> JSON:
    category = args["category"]
    return {
        "summary": f"Public guideline text for {category.replace('_', ' ')}.",
        "policy_url": f"https://policies.example-video.test/{category}",
    }


@tool(
    name="get_appeal_status",
    description="Whether the uploader has an open appeal on a video.",
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema({"appeal_open": BOOLEAN, "appeals_filed": INTEGER}),
)
def get_appeal_status(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "videos", "video_id", args["video_id"])
    return {"appeal_open": False, "appeals_filed": 0}


LOOKUP_DISTRACTORS = [
    get_review_metadata_v1,
    transcribe_audio,
    detect_language,
    run_ocr_on_frames,
    get_video_thumbnail,
    get_channel_analytics,
    search_similar_videos,
    compute_text_toxicity,
    translate_text,
    get_community_guidelines,
    get_appeal_status,
]

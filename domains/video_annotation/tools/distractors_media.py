"""Media-handling tools that sit next to the SOP's tools but that the SOP never needs.

They are real and callable (a pipeline operator would use them for other jobs), which is
exactly why an agent must not reach for them: the SOP rejects a non-conforming clip instead
of repairing it, and reads metadata from the catalog rather than from the legacy probe.
"""

import hashlib

from sopgym.core.tools import (
    JSON,
    Tool,
    ToolContext,
    arguments_schema,
    require_row,
    result_schema,
    tool,
)
from sopgym.domains.video_annotation.tools._common import BOOLEAN, INTEGER, NUMBER, STRING, VIDEO_ID

EXAMPLE_VIDEO = {"video_id": "VID-100000"}
_JOB = result_schema({"job_id": STRING, "queued": BOOLEAN, "estimated_minutes": INTEGER})


def _digest(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


@tool(
    name="probe_video_legacy",
    description=(
        "Legacy ffprobe wrapper kept for old dashboards: returns a coarse summary (frame rate "
        "rounded to an integer, resolution as text). Superseded by the video catalog."
    ),
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema({"summary": STRING, "approx_fps": INTEGER, "resolution": STRING}),
)
def probe_video_legacy(args: JSON, ctx: ToolContext) -> JSON:
    clip = require_row(ctx, "videos", "video_id", args["video_id"])
    probe = clip["probe"]
    return {
        "summary": f"{probe['container_format']}/{probe['video_codec']}",
        "approx_fps": round(probe["frame_rate"] or 0),
        "resolution": f"{probe['width']}x{probe['height']}",
    }


def _media_job(name: str, description: str, kind: str, options: JSON, example: JSON) -> Tool:
    """A tool that queues a ``kind`` job on a clip with the given ``options`` (arguments).

    The job id is derived from the clip and the options in order, so repeated calls answer
    identically; the duration is a rough estimate from the clip's length.
    """

    @tool(
        name=name,
        description=description,
        input_schema=arguments_schema(
            {"video_id": VIDEO_ID, **options}, examples=[{**EXAMPLE_VIDEO, **example}]
        ),
        output_schema=_JOB,
    )
    def run(args: JSON, ctx: ToolContext) -> JSON:
        clip = require_row(ctx, "videos", "video_id", args["video_id"])
        digest = _digest(clip["video_id"], *(args[option] for option in options))
        return {
            "job_id": f"{kind}-{digest[:8].upper()}",
            "queued": True,
            "estimated_minutes": max(1, round(clip["duration_s"] / 30)),
        }

    return run


transcode_video = _media_job(
    "transcode_video",
    "Queue a transcode of a clip into another codec and container.",
    "TC",
    {
        "target_codec": {"type": "string", "enum": ["h264", "h265"]},
        "target_container": {"type": "string", "enum": ["mp4", "mkv"]},
    },
    {"target_codec": "h264", "target_container": "mp4"},
)
resample_frame_rate = _media_job(
    "resample_frame_rate",
    "Queue a frame-rate conversion (frame blending) of a clip to a target rate.",
    "FR",
    {"target_fps": {"type": "integer", "minimum": 1, "maximum": 120}},
    {"target_fps": 30},
)
upscale_resolution = _media_job(
    "upscale_resolution",
    "Queue a super-resolution upscale of a clip to a target frame height.",
    "UP",
    {"target_height": {"type": "integer", "enum": [720, 1080, 2160]}},
    {"target_height": 1080},
)
anonymize_faces_and_plates = _media_job(
    "anonymize_faces_and_plates",
    "Queue the privacy pass that blurs faces and licence plates in a clip.",
    "AN",
    {},
    {},
)


@tool(
    name="generate_thumbnail",
    description="Render a JPEG thumbnail of a clip at a timestamp, for catalog previews.",
    input_schema=arguments_schema(
        {"video_id": VIDEO_ID, "timestamp_s": {"type": "number", "minimum": 0}},
        examples=[{**EXAMPLE_VIDEO, "timestamp_s": 1.5}],
    ),
    output_schema=result_schema({"thumbnail_uri": STRING, "width": INTEGER, "height": INTEGER}),
)
def generate_thumbnail(args: JSON, ctx: ToolContext) -> JSON:
    clip = require_row(ctx, "videos", "video_id", args["video_id"])
    stamp = min(args["timestamp_s"], clip["duration_s"])
    return {
        "thumbnail_uri": f"s3://av-thumbnails/{clip['video_id']}/{stamp:.1f}.jpg",
        "width": 320,
        "height": 180,
    }


@tool(
    name="compute_video_checksum",
    description="SHA-256 checksum of the clip's stored file, for integrity audits.",
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema({"sha256": STRING, "algorithm": STRING}),
)
def compute_video_checksum(args: JSON, ctx: ToolContext) -> JSON:
    clip = require_row(ctx, "videos", "video_id", args["video_id"])
    return {"sha256": _digest(clip["video_id"], clip["capture_date"]), "algorithm": "sha256"}


@tool(
    name="get_camera_calibration",
    description="Intrinsic calibration (focal length, principal point) of the capture camera.",
    input_schema=arguments_schema({"video_id": VIDEO_ID}, examples=[EXAMPLE_VIDEO]),
    output_schema=result_schema(
        {
            "camera_position": STRING,
            "focal_length_px": NUMBER,
            "principal_point": {"type": "array", "items": NUMBER},
        }
    ),
)
def get_camera_calibration(args: JSON, ctx: ToolContext) -> JSON:
    clip = require_row(ctx, "videos", "video_id", args["video_id"])
    width, height = clip["probe"]["width"], clip["probe"]["height"]
    return {
        "camera_position": clip["camera_position"],
        "focal_length_px": round(width * 0.82, 1),
        "principal_point": [width / 2, height / 2],
    }


MEDIA_DISTRACTORS = [
    probe_video_legacy,
    transcode_video,
    resample_frame_rate,
    upscale_resolution,
    anonymize_faces_and_plates,
    generate_thumbnail,
    compute_video_checksum,
    get_camera_calibration,
]

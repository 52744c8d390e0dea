"""Schema fragments and id helpers shared by the video annotation tools.

Run ids are derived deterministically from their inputs (frame batch -> detection run ->
segmentation run), so every later tool can tell which video, sampling rate and detector
profile an id refers to without hidden server state. Parsing them lives here, once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, not_found, require_row

VIDEO_PATTERN = "VID-[0-9]{6}"
PROFILE_CODES = {"standard": "STD", "low_light": "LOW", "adverse_weather": "ADV"}
MODE_CODES = {"instance": "INS", "panoptic": "PAN"}
SAMPLE_RATES = [5, 10]

_BATCH = rf"FB-({VIDEO_PATTERN})-R(05|10)"
_DETECTION = rf"DR-({VIDEO_PATTERN})-R(05|10)-(STD|LOW|ADV)-T([0-9]{{2}})"
_SEGMENTATION = rf"SG-({VIDEO_PATTERN}-R(?:05|10)-(?:STD|LOW|ADV)-T[0-9]{{2}})-(INS|PAN)"

VIDEO_ID: JSON = {
    "type": "string",
    "pattern": f"^{VIDEO_PATTERN}$",
    "description": "Catalog id of the driving clip, e.g. VID-100037.",
}
FRAME_BATCH_ID: JSON = {"type": "string", "pattern": f"^{_BATCH}$"}
DETECTION_RUN_ID: JSON = {"type": "string", "pattern": f"^{_DETECTION}$"}
SEGMENTATION_RUN_ID: JSON = {"type": "string", "pattern": f"^{_SEGMENTATION}$"}
ANNOTATOR_ID: JSON = {"type": "string", "pattern": "^ANN-[0-9]{4}$"}
PROJECT_CODE: JSON = {"type": "string", "pattern": "^[A-Z]{3}-[A-Z]{3}$"}

STRING: JSON = {"type": "string"}
INTEGER: JSON = {"type": "integer"}
NUMBER: JSON = {"type": "number"}
BOOLEAN: JSON = {"type": "boolean"}


def nullable(schema: JSON) -> JSON:
    """The same schema, also admitting null (a fact the source system does not report)."""
    kind = schema["type"]
    return {**schema, "type": [kind, "null"]}


@dataclass(frozen=True)
class DetectionRun:
    """What a detection run id encodes: the clip, the sampling rate, profile and threshold."""

    run_id: str
    video: dict[str, Any]
    sample_rate_fps: int
    profile: str
    threshold_percent: int

    @property
    def frames_sampled(self) -> int:
        return frames_sampled(self.video, self.sample_rate_fps)


def frames_sampled(video_row: dict[str, Any], sample_rate_fps: int) -> int:
    return int(video_row["duration_s"] * sample_rate_fps)


def batch_id(video_id: str, sample_rate_fps: int) -> str:
    return f"FB-{video_id}-R{sample_rate_fps:02d}"


def parse_batch(ctx: ToolContext, frame_batch_id: str) -> tuple[dict[str, Any], int]:
    match = re.fullmatch(_BATCH, frame_batch_id)
    if match is None:  # the schema pattern already refuses this; kept for direct callers
        raise ToolError("invalid_value", "malformed frame_batch_id", "frame_batch_id")
    return require_row(ctx, "videos", "video_id", match[1]), int(match[2])


def parse_detection_run(ctx: ToolContext, run_id: str) -> DetectionRun:
    match = re.fullmatch(_DETECTION, run_id)
    if match is None:
        raise ToolError("invalid_value", "malformed detection_run_id", "detection_run_id")
    profile = {code: name for name, code in PROFILE_CODES.items()}[match[3]]
    clip = require_row(ctx, "videos", "video_id", match[1])
    return DetectionRun(run_id, clip, int(match[2]), profile, int(match[4]))


def parse_segmentation_run(ctx: ToolContext, run_id: str) -> tuple[DetectionRun, str]:
    """The detection run a segmentation run was built on, and its mask mode."""
    match = re.fullmatch(_SEGMENTATION, run_id)
    if match is None:
        raise ToolError("invalid_value", "malformed segmentation_run_id", "segmentation_run_id")
    mode = {code: name for name, code in MODE_CODES.items()}[match[2]]
    return parse_detection_run(ctx, f"DR-{match[1]}"), mode


def kept_objects(ctx: ToolContext, run: DetectionRun) -> list[dict[str, Any]]:
    """The model's detections on the clip that clear the run's confidence threshold."""
    outputs = ctx.tables.row("model_outputs", "video_id", run.video["video_id"])
    if outputs is None:
        raise not_found("model output", "video_id", run.video["video_id"])
    cut = run.threshold_percent / 100
    return [o for o in outputs["objects"] if o["confidence"] >= cut]

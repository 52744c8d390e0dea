"""The video annotation SOP (VA-02) as code: the reference policy that derives every label."""

from __future__ import annotations

from typing import Any

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

ALLOWED_CONTAINERS = ("mp4", "mkv")
ALLOWED_CODECS = ("h264", "h265")
MIN_FPS, MAX_FPS = 24.0, 60.0
MIN_WIDTH, MIN_HEIGHT = 1280, 720
ALLOWED_COLOR_DEPTHS = (8, 10, 12)

FAST_SOURCE_FPS = 30.0  # at or above: sample 10 frames per second, else 5
LOW_LIGHT_LUMINANCE = 60  # mean luminance strictly below -> low_light
ADVERSE_PRECIPITATION = 0.40  # precipitation index at or above -> adverse_weather
THRESHOLDS = {"standard": 0.50, "low_light": 0.35, "adverse_weather": 0.40}

MIN_BOX_IOU = 0.70
MIN_MASK_IOU = 0.65
MAX_SWITCHES_PER_100 = 2.0
MIN_KAPPA = 0.75
MIN_REVIEW_SCORE = 3.50

BUCKET = "s3://av-annotation"
NONE = "none"


def input_validation(meta: dict[str, Any]) -> str:
    """SOP §3: the first failed requirement, in the SOP's order; a null value fails."""
    if not meta["video_found"]:
        return "video_not_found"
    if (
        meta["container_format"] not in ALLOWED_CONTAINERS
        or meta["video_codec"] not in ALLOWED_CODECS
    ):
        return "failed_format"
    fps = meta["frame_rate"]
    if fps is None or not MIN_FPS <= fps <= MAX_FPS:
        return "failed_frame_rate"
    width, height = meta["width"], meta["height"]
    if width is None or height is None or width < MIN_WIDTH or height < MIN_HEIGHT:
        return "failed_resolution"
    if meta["color_depth_bits"] not in ALLOWED_COLOR_DEPTHS:
        return "failed_color_depth"
    return "passed"


def sample_rate(frame_rate: float) -> int:
    return 10 if frame_rate >= FAST_SOURCE_FPS else 5


def detection_profile(scene: dict[str, Any]) -> str:
    if scene["mean_luminance"] < LOW_LIGHT_LUMINANCE:
        return "low_light"
    if scene["precipitation_index"] >= ADVERSE_PRECIPITATION:
        return "adverse_weather"
    return "standard"


def qc_result(spatial: dict[str, Any], temporal: dict[str, Any], agreement: dict[str, Any]) -> str:
    """SOP §7: the first failed check in the order spatial, temporal, agreement."""
    mask_iou = spatial["mask_mean_iou"]
    if spatial["box_mean_iou"] < MIN_BOX_IOU or (mask_iou is not None and mask_iou < MIN_MASK_IOU):
        return "failed_spatial"
    if temporal["id_switches"] * 100 / temporal["frames_evaluated"] > MAX_SWITCHES_PER_100:
        return "failed_temporal"
    if agreement["cohen_kappa"] < MIN_KAPPA:
        return "failed_agreement"
    return "passed"


def mean_score(scores: list[float]) -> float:
    return round(sum(scores) / len(scores), 2)


def file_path(stage: str, project_code: str, video_id: str, name: str) -> str:
    """SOP §9: the exact path rule for published files."""
    return f"{BUCKET}/{stage}/{project_code}/{video_id}/{name}.json"


def _rejected(validation: str) -> Solution:
    return Solution(
        outputs={
            "input_validation": validation,
            "detection_profile": "not_run",
            "segmentation_status": "not_run",
            "qc_result": "not_run",
            "mean_reviewer_score": 0.0,
            "processing_status": "rejected",
            "detection_file_path": NONE,
            "segmentation_file_path": NONE,
        },
        decisions={"branch": "rejected_at_input"},
    )


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    video_id = x["video_id"]

    meta = run.call("get_video_metadata", video_id=video_id)
    validation = input_validation(meta)
    if validation != "passed":
        return _rejected(validation)

    rate = sample_rate(meta["frame_rate"])
    batch = run.call("extract_frames", video_id=video_id, sample_rate_fps=rate)
    scene = run.call("analyze_scene_conditions", frame_batch_id=batch["frame_batch_id"])
    profile = detection_profile(scene)
    detection = run.call(
        "run_object_detection",
        frame_batch_id=batch["frame_batch_id"],
        profile=profile,
        confidence_threshold=THRESHOLDS[profile],
    )
    run_id = detection["detection_run_id"]

    segmentation_id = None
    if x["segmentation_mode"] != "none":
        segmentation = run.call(
            "run_segmentation", detection_run_id=run_id, mode=x["segmentation_mode"]
        )
        segmentation_id = segmentation["segmentation_run_id"]
    with_masks = {"segmentation_run_id": segmentation_id} if segmentation_id else {}

    spatial = run.call("measure_spatial_accuracy", detection_run_id=run_id, **with_masks)
    temporal = run.call("measure_temporal_consistency", detection_run_id=run_id)
    agreement = run.call(
        "measure_inter_annotator_agreement",
        detection_run_id=run_id,
        annotator_ids=list(x["annotator_ids"]),
    )
    qc = qc_result(spatial, temporal, agreement)

    review = run.call(
        "request_human_review",
        video_id=video_id,
        detection_run_id=run_id,
        review_tier="standard" if qc == "passed" else "expert",
    )
    score = mean_score(review["reviewer_scores"])
    completed = qc == "passed" and score >= MIN_REVIEW_SCORE
    stage = "released" if completed else "rework"

    detection_path = file_path(stage, x["project_code"], video_id, "detections")
    segmentation_path = NONE
    publish: dict[str, Any] = {
        "video_id": video_id,
        "detection_run_id": run_id,
        "review_id": review["review_id"],
        "detection_path": detection_path,
    }
    if segmentation_id:
        segmentation_path = file_path(stage, x["project_code"], video_id, "segmentation")
        publish |= {"segmentation_run_id": segmentation_id, "segmentation_path": segmentation_path}
    run.call("publish_annotations", **publish)

    return Solution(
        outputs={
            "input_validation": validation,
            "detection_profile": profile,
            "segmentation_status": "completed" if segmentation_id else "not_requested",
            "qc_result": qc,
            "mean_reviewer_score": score,
            "processing_status": "completed" if completed else "needs_rework",
            "detection_file_path": detection_path,
            "segmentation_file_path": segmentation_path,
        },
        decisions={
            "sample_rate_fps": rate,
            "confidence_threshold": THRESHOLDS[profile],
            "objects_detected": detection["objects_detected"],
            "review_tier": review["review_tier"],
            "branch": stage,
        },
    )

"""Hand-checked cases of the video annotation SOP (VA-02) and its tools' refusals.

Each case builds a one-clip dataset by hand, runs the reference policy against the real tool
implementations and compares with outcomes worked out from the SOP text.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from sopgym.core.domain import PolicyRun
from sopgym.core.tables import Tables
from sopgym.core.tasks import Solution, Task
from sopgym.domains.video_annotation import DOMAIN
from tests.domains.refusals import assert_refused

VID = "VID-100037"
PROJECT = "AVP-HWY"
ANNOTATORS = ["ANN-1011", "ANN-1012"]
RELEASED = f"s3://av-annotation/released/{PROJECT}/{VID}"
REWORK = f"s3://av-annotation/rework/{PROJECT}/{VID}"


def dataset(with_video: bool = True, **facts: Any) -> Tables:
    """One clip that passes every requirement and every QC check unless ``facts`` say so.

    ``facts`` override probe fields (frame_rate, width, ...), scene fields, audit fields and
    the panels' scores (``standard_scores`` / ``expert_scores``).
    """
    probe = {
        "container_format": "mp4",
        "video_codec": "h264",
        "frame_rate": 30.0,
        "width": 1920,
        "height": 1080,
        "color_depth_bits": 8,
        "frame_count": 1800,
    }
    scene = {"mean_luminance": 150, "precipitation_index": 0.1, "glare_fraction": 0.05}
    audit = {
        "box_iou_standard": 0.85,
        "box_iou_low_light": 0.74,
        "box_iou_adverse_weather": 0.76,
        "mask_iou_instance": 0.8,
        "mask_iou_panoptic": 0.78,
        "switches_per_100_frames": 0.5,
        "cohen_kappa": 0.9,
    }
    scores = {"standard_scores": [4.0, 4.2, 4.4], "expert_scores": [2.5, 3.0, 3.1]}
    for key, value in facts.items():
        target = next(t for t in (probe, scene, audit, scores) if key in t)
        target[key] = value
    objects = [{"object_class": "vehicle", "confidence": c} for c in (0.3, 0.38, 0.45, 0.6, 0.9)]
    videos = [
        {
            "video_id": VID,
            "duration_s": 60.0,
            "camera_position": "front_center",
            "capture_date": "2026-01-10",
            "probe": probe,
        }
    ]
    annotators = [
        {"annotator_id": "ANN-1011", "project_code": PROJECT, "active": True},
        {"annotator_id": "ANN-1012", "project_code": PROJECT, "active": True},
        {"annotator_id": "ANN-1014", "project_code": PROJECT, "active": False},
    ]
    panels = [
        {
            "panel_key": f"{VID}/{tier}",
            "reviewer_ids": ["REV-1", "REV-2", "REV-3"],
            "reviewer_scores": scores[f"{tier}_scores"],
        }
        for tier in ("standard", "expert")
    ]
    return Tables(
        {
            "videos": pd.DataFrame(videos if with_video else [], columns=list(videos[0])),
            "scene_analysis": pd.DataFrame([{"video_id": VID, "road_type": "highway", **scene}]),
            "model_outputs": pd.DataFrame([{"video_id": VID, "objects": objects}]),
            "qc_audits": pd.DataFrame([{"video_id": VID, **audit}]),
            "annotators": pd.DataFrame(annotators),
            "review_panels": pd.DataFrame(panels),
        }
    )


def solve(tables: Tables, mode: str = "none") -> tuple[Solution, PolicyRun]:
    run = PolicyRun(DOMAIN.tool_map(), DOMAIN.context(tables, None))
    task = Task(
        id="video_annotation-t",
        domain="video_annotation",
        inputs={
            "video_id": VID,
            "project_code": PROJECT,
            "segmentation_mode": mode,
            "annotator_ids": ANNOTATORS,
        },
    )
    return DOMAIN.solve(task, run), run


def call(tables: Tables, name: str, **arguments: Any) -> dict:
    return DOMAIN.tool_map()[name](arguments, DOMAIN.context(tables, None))


def test_clean_clip_is_released_with_standard_review() -> None:
    solution, run = solve(dataset())
    assert solution.outputs == {
        "input_validation": "passed",
        "detection_profile": "standard",
        "segmentation_status": "not_requested",
        "qc_result": "passed",
        "mean_reviewer_score": 4.2,
        "processing_status": "completed",
        "detection_file_path": f"{RELEASED}/detections.json",
        "segmentation_file_path": "none",
    }
    assert [c.name for c in run.calls] == [
        "get_video_metadata",
        "extract_frames",
        "analyze_scene_conditions",
        "run_object_detection",
        "measure_spatial_accuracy",
        "measure_temporal_consistency",
        "measure_inter_annotator_agreement",
        "request_human_review",
        "publish_annotations",
    ]
    detection = run.calls[3].arguments
    assert detection == {
        "frame_batch_id": f"FB-{VID}-R10",
        "profile": "standard",
        "confidence_threshold": 0.5,
    }
    assert run.calls[7].arguments["review_tier"] == "standard"


@pytest.mark.parametrize(("fps", "rate"), [(30.0, 10), (60.0, 10), (29.97, 5), (24.0, 5)])
def test_sampling_rate_follows_the_source_frame_rate(fps: float, rate: int) -> None:
    _, run = solve(dataset(frame_rate=fps))
    assert run.calls[1].arguments == {"video_id": VID, "sample_rate_fps": rate}


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ({"container_format": "avi", "video_codec": "mjpeg"}, "failed_format"),
        ({"container_format": "mov"}, "failed_format"),
        ({"video_codec": "vp9", "frame_rate": 15.0}, "failed_format"),  # first failure wins
        ({"frame_rate": 23.976}, "failed_frame_rate"),
        ({"frame_rate": 120.0, "width": 640}, "failed_frame_rate"),
        ({"frame_rate": None}, "failed_frame_rate"),
        ({"width": 1280, "height": 540}, "failed_resolution"),
        ({"width": 960, "color_depth_bits": 16}, "failed_resolution"),
        ({"color_depth_bits": 6}, "failed_color_depth"),
        ({"color_depth_bits": None}, "failed_color_depth"),
    ],
)
def test_input_requirements_reject_in_order(facts: dict, expected: str) -> None:
    solution, run = solve(dataset(**facts), mode="instance")
    assert solution.outputs == {
        "input_validation": expected,
        "detection_profile": "not_run",
        "segmentation_status": "not_run",
        "qc_result": "not_run",
        "mean_reviewer_score": 0.0,
        "processing_status": "rejected",
        "detection_file_path": "none",
        "segmentation_file_path": "none",
    }
    assert [c.name for c in run.calls] == ["get_video_metadata"]


def test_boundary_values_pass_the_input_requirements() -> None:
    tables = dataset(frame_rate=60.0, width=1280, height=720, color_depth_bits=12)
    assert solve(tables)[0].outputs["input_validation"] == "passed"


def test_unknown_clip_is_reported_not_found() -> None:
    solution, run = solve(dataset(with_video=False))
    assert solution.outputs["input_validation"] == "video_not_found"
    assert solution.outputs["processing_status"] == "rejected"
    assert len(run.calls) == 1


@pytest.mark.parametrize(
    ("luminance", "precipitation", "profile", "threshold"),
    [
        (59, 0.8, "low_light", 0.35),  # dark wins over rain
        (60, 0.1, "standard", 0.5),  # 60 is not below 60
        (60, 0.40, "adverse_weather", 0.4),  # 0.40 is at the threshold
        (120, 0.39, "standard", 0.5),
    ],
)
def test_detector_profile_and_threshold(
    luminance: int, precipitation: float, profile: str, threshold: float
) -> None:
    solution, run = solve(dataset(mean_luminance=luminance, precipitation_index=precipitation))
    assert solution.outputs["detection_profile"] == profile
    assert run.calls[3].arguments["confidence_threshold"] == threshold


def test_wrong_profile_run_scores_its_own_iou() -> None:
    """The audit depends on the profile actually used, so a wrong profile changes QC."""
    tables = dataset(box_iou_low_light=0.6)
    good = call(tables, "measure_spatial_accuracy", detection_run_id=f"DR-{VID}-R10-STD-T50")
    bad = call(tables, "measure_spatial_accuracy", detection_run_id=f"DR-{VID}-R10-LOW-T35")
    assert (good["box_mean_iou"], bad["box_mean_iou"]) == (0.85, 0.6)


def test_threshold_decides_which_objects_count() -> None:
    tables = dataset()
    batch = f"FB-{VID}-R10"
    low = call(
        tables,
        "run_object_detection",
        frame_batch_id=batch,
        profile="low_light",
        confidence_threshold=0.35,
    )
    std = call(
        tables,
        "run_object_detection",
        frame_batch_id=batch,
        profile="standard",
        confidence_threshold=0.5,
    )
    assert (low["objects_detected"], std["objects_detected"]) == (4, 2)
    assert low["detection_run_id"] == f"DR-{VID}-R10-LOW-T35"


def test_segmentation_is_published_next_to_the_detections() -> None:
    solution, run = solve(dataset(), mode="panoptic")
    assert solution.outputs["segmentation_status"] == "completed"
    assert solution.outputs["segmentation_file_path"] == f"{RELEASED}/segmentation.json"
    seg_id = f"SG-{VID}-R10-STD-T50-PAN"
    spatial = next(c for c in run.calls if c.name == "measure_spatial_accuracy")
    assert spatial.arguments == {
        "detection_run_id": f"DR-{VID}-R10-STD-T50",
        "segmentation_run_id": seg_id,
    }
    publish = run.calls[-1].arguments
    assert publish["segmentation_run_id"] == seg_id
    assert publish["segmentation_path"] == f"{RELEASED}/segmentation.json"


@pytest.mark.parametrize(
    ("facts", "mode", "qc"),
    [
        ({"box_iou_standard": 0.69}, "none", "failed_spatial"),
        ({"box_iou_standard": 0.70}, "none", "passed"),
        ({"mask_iou_instance": 0.6}, "instance", "failed_spatial"),
        ({"mask_iou_instance": 0.6}, "none", "passed"),  # masks not audited without a run
        ({"switches_per_100_frames": 2.0}, "none", "passed"),  # 12 / 600 frames = 2.0
        ({"switches_per_100_frames": 2.1}, "none", "failed_temporal"),  # 13 / 600
        ({"cohen_kappa": 0.74}, "none", "failed_agreement"),
        ({"cohen_kappa": 0.75}, "none", "passed"),
        ({"switches_per_100_frames": 4.0, "cohen_kappa": 0.5}, "none", "failed_temporal"),
        ({"box_iou_standard": 0.5, "cohen_kappa": 0.5}, "none", "failed_spatial"),
    ],
)
def test_quality_control_checks(facts: dict, mode: str, qc: str) -> None:
    solution, run = solve(dataset(**facts), mode=mode)
    assert solution.outputs["qc_result"] == qc
    tier = next(c for c in run.calls if c.name == "request_human_review").arguments
    assert tier["review_tier"] == ("standard" if qc == "passed" else "expert")


def test_failed_qc_goes_to_rework_with_the_expert_score() -> None:
    solution, run = solve(dataset(cohen_kappa=0.6), mode="instance")
    assert solution.outputs["mean_reviewer_score"] == 2.87  # (2.5 + 3.0 + 3.1) / 3
    assert solution.outputs["processing_status"] == "needs_rework"
    assert solution.outputs["detection_file_path"] == f"{REWORK}/detections.json"
    assert solution.outputs["segmentation_file_path"] == f"{REWORK}/segmentation.json"
    assert run.calls[-1].name == "publish_annotations"


@pytest.mark.parametrize(
    ("scores", "mean", "status"),
    [
        ([3.5, 3.5, 3.5], 3.5, "completed"),
        ([3.4, 3.5, 3.6], 3.5, "completed"),
        ([3.4, 3.5, 3.5], 3.47, "needs_rework"),
        ([2.9, 3.1, 3.3], 3.1, "needs_rework"),
    ],
)
def test_review_score_threshold(scores: list[float], mean: float, status: str) -> None:
    solution, _ = solve(dataset(standard_scores=scores))
    assert solution.outputs["mean_reviewer_score"] == mean
    assert solution.outputs["processing_status"] == status


# -- tool refusals -----------------------------------------------------------------------


RUN = f"DR-{VID}-R10-STD-T50"
PUBLISH = {
    "video_id": VID,
    "detection_run_id": RUN,
    "review_id": f"RV-{VID}-STD",
    "detection_path": f"{RELEASED}/detections.json",
}


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "field"),
    [
        pytest.param(
            "extract_frames",
            {"video_id": "VID-999999", "sample_rate_fps": 5},
            "not_found",
            "video_id",
            id="frames-of-unknown-clip",
        ),
        pytest.param(
            "measure_temporal_consistency",
            {"detection_run_id": "DR-VID-999999-R05-STD-T50"},
            "not_found",
            None,
            id="run-of-unknown-clip",
        ),
        pytest.param(
            "measure_inter_annotator_agreement",
            {"detection_run_id": RUN, "annotator_ids": ["ANN-1011", "ANN-9999"]},
            "not_found",
            None,
            id="unknown-annotator",
        ),
        pytest.param(
            "measure_inter_annotator_agreement",
            {"detection_run_id": RUN, "annotator_ids": ["ANN-1011", "ANN-1014"]},
            "invalid_value",
            "annotator_ids",
            id="inactive-annotator",
        ),
        pytest.param(
            "measure_inter_annotator_agreement",
            {"detection_run_id": RUN, "annotator_ids": ["ANN-1011", "ANN-1011"]},
            "invalid_value",
            None,
            id="repeated-annotator",
        ),
        pytest.param(
            "measure_spatial_accuracy",
            {"detection_run_id": RUN, "segmentation_run_id": f"SG-{VID}-R10-LOW-T35-INS"},
            "invalid_value",
            "segmentation_run_id",
            id="segmentation-of-another-detection-run",
        ),
        pytest.param(
            "request_human_review",
            {"video_id": "VID-100000", "detection_run_id": RUN, "review_tier": "standard"},
            "invalid_value",
            None,
            id="review-of-another-clips-run",
        ),
        pytest.param(
            "publish_annotations",
            {
                **PUBLISH,
                "detection_path": f"s3://av-annotation/released/{PROJECT}/VID-100000/"
                "detections.json",
            },
            "invalid_value",
            "detection_path",
            id="publish-to-another-clips-path",
        ),
        pytest.param(
            "publish_annotations",
            {**PUBLISH, "segmentation_path": f"{RELEASED}/segmentation.json"},
            "invalid_value",
            "segmentation_path",
            id="publish-segmentation-path-without-run",
        ),
        pytest.param(
            "publish_annotations",
            {
                **PUBLISH,
                "segmentation_run_id": f"SG-{VID}-R10-STD-T50-INS",
                "segmentation_path": f"{REWORK}/segmentation.json",
            },
            "invalid_value",
            None,
            id="publish-segmentation-to-another-area",
        ),
    ],
)
def test_refusals(tool: str, arguments: dict, code: str, field: str | None) -> None:
    assert_refused(DOMAIN, DOMAIN.context(dataset(), None), tool, arguments, code, field)


def test_unknown_clip_metadata_is_a_fact_not_an_error() -> None:
    assert call(dataset(), "get_video_metadata", video_id="VID-999999")["video_found"] is False


def test_reviewed_clip_is_published_to_the_released_area() -> None:
    assert call(dataset(), "publish_annotations", **PUBLISH)["storage_area"] == "released"

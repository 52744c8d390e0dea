"""Video annotation (autonomous driving): validate a clip, detect and segment objects, run
quality control and human review, then publish the annotation files."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.video_annotation.generator import generate
from sopgym.domains.video_annotation.policy import solve
from sopgym.domains.video_annotation.tools import DISTRACTORS, TOOLS

_PATH = {"type": "string", "pattern": "^(none|s3://av-annotation/.+\\.json)$"}

DOMAIN = DomainPack(
    name="video_annotation",
    title="Video annotation for autonomous driving (perception data)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "videos": "video_id",
        "scene_analysis": "video_id",
        "model_outputs": "video_id",
        "qc_audits": "video_id",
        "annotators": "annotator_id",
        "review_panels": "panel_key",
    },
    input_schema={
        "type": "object",
        "properties": {
            "video_id": {"type": "string", "pattern": "^VID-[0-9]{6}$"},
            "project_code": {"type": "string", "pattern": "^[A-Z]{3}-[A-Z]{3}$"},
            "segmentation_mode": {"enum": ["none", "instance", "panoptic"]},
            "annotator_ids": {
                "type": "array",
                "items": {"type": "string", "pattern": "^ANN-[0-9]{4}$"},
                "minItems": 2,
                "maxItems": 2,
            },
            "request_date": {"type": "string", "format": "date"},
        },
        "required": ["video_id", "project_code", "segmentation_mode", "annotator_ids"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "input_validation": {
                "enum": [
                    "passed",
                    "failed_format",
                    "failed_frame_rate",
                    "failed_resolution",
                    "failed_color_depth",
                    "video_not_found",
                ]
            },
            "detection_profile": {"enum": ["standard", "low_light", "adverse_weather", "not_run"]},
            "segmentation_status": {"enum": ["completed", "not_requested", "not_run"]},
            "qc_result": {
                "enum": [
                    "passed",
                    "failed_spatial",
                    "failed_temporal",
                    "failed_agreement",
                    "not_run",
                ]
            },
            "mean_reviewer_score": {
                "type": "number",
                "minimum": 0,
                "maximum": 5,
                "x-tolerance": 0.01,
            },
            "processing_status": {"enum": ["completed", "needs_rework", "rejected"]},
            "detection_file_path": _PATH,
            "segmentation_file_path": _PATH,
        },
        "required": [
            "input_validation",
            "detection_profile",
            "segmentation_status",
            "qc_result",
            "mean_reviewer_score",
            "processing_status",
            "detection_file_path",
            "segmentation_file_path",
        ],
        "additionalProperties": False,
    },
    dependencies={
        "extract_frames": ["get_video_metadata"],
        "analyze_scene_conditions": ["extract_frames"],
        "run_object_detection": ["analyze_scene_conditions"],
        "run_segmentation": ["run_object_detection"],
        "measure_spatial_accuracy": ["run_object_detection"],
        "measure_temporal_consistency": ["run_object_detection"],
        "measure_inter_annotator_agreement": ["run_object_detection"],
        "request_human_review": [
            "measure_spatial_accuracy",
            "measure_temporal_consistency",
            "measure_inter_annotator_agreement",
        ],
        "publish_annotations": ["request_human_review"],
    },
)

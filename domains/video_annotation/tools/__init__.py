"""Video annotation tools, one module each, in SOP order; distractors in two shared modules."""

from sopgym.domains.video_annotation.tools import (
    analyze_scene_conditions,
    extract_frames,
    get_video_metadata,
    measure_inter_annotator_agreement,
    measure_spatial_accuracy,
    measure_temporal_consistency,
    publish_annotations,
    request_human_review,
    run_object_detection,
    run_segmentation,
)
from sopgym.domains.video_annotation.tools.distractors_labeling import LABELING_DISTRACTORS
from sopgym.domains.video_annotation.tools.distractors_media import MEDIA_DISTRACTORS

TOOLS = [
    get_video_metadata.run,
    extract_frames.run,
    analyze_scene_conditions.run,
    run_object_detection.run,
    run_segmentation.run,
    measure_spatial_accuracy.run,
    measure_temporal_consistency.run,
    measure_inter_annotator_agreement.run,
    request_human_review.run,
    publish_annotations.run,
]
DISTRACTORS = [*MEDIA_DISTRACTORS, *LABELING_DISTRACTORS]

__all__ = ["DISTRACTORS", "TOOLS"]

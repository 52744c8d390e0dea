"""Object detection over a frame batch with a chosen detector profile and threshold."""

from collections import Counter

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.video_annotation.tools._common import (
    FRAME_BATCH_ID,
    INTEGER,
    NUMBER,
    PROFILE_CODES,
    STRING,
    DetectionRun,
    kept_objects,
    parse_batch,
)

CLASSES = ["vehicle", "pedestrian", "cyclist", "traffic_sign", "traffic_light"]


@tool(
    name="run_object_detection",
    description=(
        "Run the 2-D object detector over a frame batch with one of its profiles (tuned "
        "weights for standard, low-light or adverse-weather footage) and a confidence "
        "threshold. Returns the detection run id used by segmentation and quality control."
    ),
    input_schema=arguments_schema(
        {
            "frame_batch_id": FRAME_BATCH_ID,
            "profile": {"type": "string", "enum": list(PROFILE_CODES)},
            "confidence_threshold": {"type": "number", "minimum": 0.05, "maximum": 0.95},
        }
    ),
    output_schema=result_schema(
        {
            "detection_run_id": STRING,
            "frames_processed": INTEGER,
            "objects_detected": INTEGER,
            "class_counts": result_schema({name: INTEGER for name in CLASSES}),
            "mean_confidence": NUMBER,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    clip, rate = parse_batch(ctx, args["frame_batch_id"])
    percent = round(args["confidence_threshold"] * 100)
    code = PROFILE_CODES[args["profile"]]
    run_id = f"DR-{clip['video_id']}-R{rate:02d}-{code}-T{percent:02d}"
    detection = DetectionRun(run_id, clip, rate, args["profile"], percent)
    objects = kept_objects(ctx, detection)
    counts = Counter(o["object_class"] for o in objects)
    confidence = sum(o["confidence"] for o in objects) / len(objects) if objects else 0.0
    return {
        "detection_run_id": run_id,
        "frames_processed": detection.frames_sampled,
        "objects_detected": len(objects),
        "class_counts": {name: counts[name] for name in CLASSES},
        "mean_confidence": round(confidence, 3),
    }

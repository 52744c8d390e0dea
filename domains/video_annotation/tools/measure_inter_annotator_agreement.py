"""Inter-annotator agreement: Cohen's kappa of two annotators on the run's audit frames."""

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, not_found, result_schema, tool
from sopgym.domains.video_annotation.tools._audits import audit
from sopgym.domains.video_annotation.tools._common import (
    ANNOTATOR_ID,
    DETECTION_RUN_ID,
    INTEGER,
    NUMBER,
    parse_detection_run,
)

FRAMES_COMPARED = 40


@tool(
    name="measure_inter_annotator_agreement",
    description=(
        "Have two annotators independently label the audit frames of a detection run and "
        "return Cohen's kappa of their labels (1.0 = perfect agreement)."
    ),
    input_schema=arguments_schema(
        {
            "detection_run_id": DETECTION_RUN_ID,
            "annotator_ids": {
                "type": "array",
                "items": ANNOTATOR_ID,
                "minItems": 2,
                "maxItems": 2,
                "uniqueItems": True,
            },
        }
    ),
    output_schema=result_schema(
        {
            "frames_compared": INTEGER,
            "cohen_kappa": NUMBER,
            "annotators": {"type": "array", "items": {"type": "string"}},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    detection = parse_detection_run(ctx, args["detection_run_id"])
    for annotator in args["annotator_ids"]:
        person = ctx.tables.row("annotators", "annotator_id", annotator)
        if person is None:
            raise not_found("annotator", "annotator_id", annotator)
        if not person["active"]:
            raise ToolError("invalid_value", f"annotator {annotator} is inactive", "annotator_ids")
    record = audit(ctx, detection.video["video_id"])
    return {
        "frames_compared": FRAMES_COMPARED,
        "cohen_kappa": record["cohen_kappa"],
        "annotators": sorted(args["annotator_ids"]),
    }

"""Step 5 of the SOP: the disposal guideline of a waste stream, with its severity score."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.dangerous_goods.tools._common import (
    NULLABLE_TEXT,
    SEVERITY,
    WASTE_STREAM,
    severity,
)


@tool(
    name="get_disposal_guidelines",
    description=(
        "Retrieve the disposal guideline for a waste stream code: disposal method, whether a "
        "licensed carrier is needed and the disposal severity score (1-5, null while the "
        "stream is still under review)."
    ),
    input_schema=arguments_schema({"waste_stream_code": WASTE_STREAM}),
    output_schema=result_schema(
        {
            "disposal_found": {"type": "boolean"},
            "waste_stream_code": {"type": "string"},
            "disposal_method": NULLABLE_TEXT,
            "licensed_carrier_required": {"type": ["boolean", "null"]},
            "disposal_severity_score": SEVERITY,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    code = args["waste_stream_code"]
    stream = ctx.tables.row("disposal_guidelines", "waste_stream_code", code)
    if stream is None:
        return {
            "disposal_found": False,
            "waste_stream_code": code,
            "disposal_method": None,
            "licensed_carrier_required": None,
            "disposal_severity_score": None,
        }
    return {
        "disposal_found": True,
        "waste_stream_code": code,
        "disposal_method": stream["method"],
        "licensed_carrier_required": bool(stream["licensed_carrier_required"]),
        "disposal_severity_score": severity(stream["severity_score"]),
    }

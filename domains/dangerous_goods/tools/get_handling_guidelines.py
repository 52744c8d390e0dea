"""Step 3 of the SOP: the handling guideline written for one SDS, with its severity score.

Guidelines can be drafts; the SOP only accepts an approved guideline's score.
"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.dangerous_goods.tools._common import NULLABLE_TEXT, SDS_ID, SEVERITY, severity


@tool(
    name="get_handling_guidelines",
    description=(
        "Retrieve the handling guideline linked to a safety data sheet id: guideline id, "
        "approval status, required protective equipment, storage group and the handling "
        "severity score (1-5, null when not yet scored)."
    ),
    input_schema=arguments_schema({"sds_id": SDS_ID}),
    output_schema=result_schema(
        {
            "guideline_found": {"type": "boolean"},
            "guideline_id": NULLABLE_TEXT,
            "guideline_status": {"type": ["string", "null"], "enum": ["approved", "draft", None]},
            "protective_equipment": {"type": "array", "items": {"type": "string"}},
            "storage_group": NULLABLE_TEXT,
            "handling_severity_score": SEVERITY,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    guideline = ctx.tables.row("handling_guidelines", "sds_id", args["sds_id"])
    if guideline is None:
        return {
            "guideline_found": False,
            "guideline_id": None,
            "guideline_status": None,
            "protective_equipment": [],
            "storage_group": None,
            "handling_severity_score": None,
        }
    return {
        "guideline_found": True,
        "guideline_id": guideline["guideline_id"],
        "guideline_status": guideline["status"],
        "protective_equipment": guideline["protective_equipment"].split(";"),
        "storage_group": guideline["storage_group"],
        "handling_severity_score": severity(guideline["severity_score"]),
    }

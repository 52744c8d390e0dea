"""Step 1 of the SOP: the product's safety data sheet (SDS) and its severity score.

The SDS also names the UN number and the waste stream, which later steps must use as
arguments (the SDS is the authoritative source, not the shipping declaration).
"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.dangerous_goods.tools._common import (
    NULLABLE_TEXT,
    PRODUCT_ID,
    SEVERITY,
    severity,
)

SDS_FIELDS = ("sds_id", "revision_date", "un_number", "waste_stream_code", "signal_word")


@tool(
    name="get_safety_data_sheet",
    description=(
        "Retrieve the current safety data sheet on file for a product: SDS id, revision date, "
        "UN number, waste stream code, signal word, hazard statements and the SDS severity "
        "score (1-5, null when the sheet was never scored)."
    ),
    input_schema=arguments_schema({"product_id": PRODUCT_ID}),
    output_schema=result_schema(
        {
            "sds_found": {"type": "boolean"},
            "sds_id": NULLABLE_TEXT,
            "revision_date": {"type": ["string", "null"], "format": "date"},
            "un_number": NULLABLE_TEXT,
            "waste_stream_code": NULLABLE_TEXT,
            "signal_word": NULLABLE_TEXT,
            "hazard_statements": {"type": "array", "items": {"type": "string"}},
            "sds_severity_score": SEVERITY,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    product_id = args["product_id"]
    require_row(ctx, "products", "product_id", product_id)
    sheet = ctx.tables.row("safety_data_sheets", "product_id", product_id)
    if sheet is None:
        return {
            "sds_found": False,
            **dict.fromkeys(SDS_FIELDS),
            "hazard_statements": [],
            "sds_severity_score": None,
        }
    return {
        "sds_found": True,
        **{key: sheet[key] for key in SDS_FIELDS},
        "hazard_statements": [h for h in sheet["hazard_statements"].split(";") if h],
        "sds_severity_score": severity(sheet["severity_score"]),
    }

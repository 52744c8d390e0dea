"""Step 3 of the SOP: the tax authority's record of a taxpayer identification number."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.know_your_business.tools._common import (
    NAME,
    NULLABLE_TEXT,
    SIMILARITY,
    TAX_ID,
    name_similarity,
)


@tool(
    name="verify_tax_identity",
    description=(
        "Check a taxpayer identification number (TIN) with the tax authority. Returns whether "
        "it exists, its status, the name it is registered to and how similar (0-100) that name "
        "is to the legal name supplied."
    ),
    input_schema=arguments_schema({"tax_id": TAX_ID, "legal_name": NAME}),
    output_schema=result_schema(
        {
            "tin_found": {"type": "boolean"},
            "tin_status": {"type": ["string", "null"], "enum": ["active", "revoked", None]},
            "registered_name": NULLABLE_TEXT,
            "name_similarity": SIMILARITY,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    record = ctx.tables.row("tax_records", "tax_id", args["tax_id"])
    if record is None:
        return {
            "tin_found": False,
            "tin_status": None,
            "registered_name": None,
            "name_similarity": None,
        }
    return {
        "tin_found": True,
        "tin_status": record["status"],
        "registered_name": record["registered_name"],
        "name_similarity": name_similarity(args["legal_name"], record["registered_name"]),
    }

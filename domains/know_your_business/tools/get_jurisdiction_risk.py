"""Step 7 of the SOP: the country-risk score of a jurisdiction (0 lowest, 100 highest)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.know_your_business.tools._common import COUNTRY_CODE


@tool(
    name="get_jurisdiction_risk",
    description=(
        "Return the compliance team's country-risk score (0-100) for a jurisdiction code, with "
        "the jurisdiction's name and the date the score was last reviewed."
    ),
    input_schema=arguments_schema({"country_code": COUNTRY_CODE}),
    output_schema=result_schema(
        {
            "country_code": {"type": "string"},
            "jurisdiction_name": {"type": "string"},
            "risk_score": {"type": "integer", "minimum": 0, "maximum": 100},
            "last_reviewed": {"type": "string", "format": "date"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    code = args["country_code"]
    record = require_row(ctx, "jurisdictions", "country_code", code)
    return {
        "country_code": code,
        "jurisdiction_name": record["name"],
        "risk_score": int(record["risk_score"]),
        "last_reviewed": record["last_reviewed"],
    }

"""Step 5 of the SOP: the shareholders on record for a company, as filed with the registry."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.know_your_business.tools._common import REGISTRATION_NUMBER


@tool(
    name="get_ownership_structure",
    description=(
        "List the shareholders on record for a company: name, whether each is an individual "
        "or a corporate body, the percentage held and the country of residence or "
        "incorporation."
    ),
    input_schema=arguments_schema({"registration_number": REGISTRATION_NUMBER}),
    output_schema=result_schema(
        {
            "registration_number": {"type": "string"},
            "owners": {
                "type": "array",
                "items": result_schema(
                    {
                        "owner_name": {"type": "string"},
                        "owner_type": {"enum": ["individual", "corporate"]},
                        "ownership_percent": {"type": "integer", "minimum": 0, "maximum": 100},
                        "country": {"type": "string"},
                    }
                ),
            },
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    number = args["registration_number"]
    rows = sorted(
        ctx.tables.rows("ownership", "registration_number", number),
        key=lambda r: r["holding_id"],
    )
    return {
        "registration_number": number,
        "owners": [
            {
                "owner_name": r["owner_name"],
                "owner_type": r["owner_type"],
                "ownership_percent": int(r["ownership_percent"]),
                "country": r["country"],
            }
            for r in rows
        ],
    }

"""Step 4 of the SOP: the licences of one type that a registered company holds."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.know_your_business.tools._common import LICENSE_TYPES, REGISTRATION_NUMBER


@tool(
    name="check_business_licenses",
    description=(
        "List the licences of a given type held by a company (by registration number), with "
        "each licence's number, status and issue and expiry dates. An empty list means no "
        "licence of that type is on record."
    ),
    input_schema=arguments_schema(
        {
            "registration_number": REGISTRATION_NUMBER,
            "license_type": {"type": "string", "enum": LICENSE_TYPES},
        }
    ),
    output_schema=result_schema(
        {
            "license_type": {"type": "string"},
            "licenses": {
                "type": "array",
                "items": result_schema(
                    {
                        "license_number": {"type": "string"},
                        "status": {"enum": ["active", "suspended", "revoked"]},
                        "issued_date": {"type": "string", "format": "date"},
                        "expiry_date": {"type": "string", "format": "date"},
                    }
                ),
            },
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    held = ctx.tables.rows("licenses", "registration_number", args["registration_number"])
    wanted = sorted(
        (r for r in held if r["license_type"] == args["license_type"]),
        key=lambda r: r["license_number"],
    )
    return {
        "license_type": args["license_type"],
        "licenses": [
            {
                "license_number": r["license_number"],
                "status": r["status"],
                "issued_date": r["issued_date"],
                "expiry_date": r["expiry_date"],
            }
            for r in wanted
        ],
    }

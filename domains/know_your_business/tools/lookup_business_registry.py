"""Step 2 of the SOP: the company registry's record for a registration number.

A number registered in another jurisdiction is reported as not found: the registry of the
claimed jurisdiction has no such company.
"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.know_your_business.tools._common import (
    COUNTRY_CODE,
    NAME,
    NULLABLE_TEXT,
    REGISTRATION_NUMBER,
    SIMILARITY,
    name_similarity,
)

RECORD_FIELDS = ("legal_name", "registration_status", "incorporation_date", "registered_address")


@tool(
    name="lookup_business_registry",
    description=(
        "Look a company up in the registry of a jurisdiction by registration number. Returns "
        "the legal name, registration status, incorporation date and registered address, and "
        "how similar (0-100) the supplied business name is to the legal name."
    ),
    input_schema=arguments_schema(
        {
            "registration_number": REGISTRATION_NUMBER,
            "jurisdiction": COUNTRY_CODE,
            "business_name": NAME,
        }
    ),
    output_schema=result_schema(
        {
            "record_found": {"type": "boolean"},
            "registration_number": {"type": "string"},
            "jurisdiction": {"type": "string"},
            "legal_name": NULLABLE_TEXT,
            "registration_status": {
                "type": ["string", "null"],
                "enum": ["active", "dissolved", "suspended", None],
            },
            "incorporation_date": {"type": ["string", "null"], "format": "date"},
            "registered_address": NULLABLE_TEXT,
            "name_similarity": SIMILARITY,
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    number, jurisdiction = args["registration_number"], args["jurisdiction"]
    record = ctx.tables.row("business_registry", "registration_number", number)
    base = {"registration_number": number, "jurisdiction": jurisdiction}
    if record is None or record["jurisdiction"] != jurisdiction:
        return {
            "record_found": False,
            **base,
            **dict.fromkeys(RECORD_FIELDS),
            "name_similarity": None,
        }
    return {
        "record_found": True,
        **base,
        "legal_name": record["legal_name"],
        "registration_status": record["status"],
        "incorporation_date": record["incorporation_date"],
        "registered_address": record["registered_address"],
        "name_similarity": name_similarity(args["business_name"], record["legal_name"]),
    }

"""Callable tools that look relevant to business verification but that the SOP never uses."""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.know_your_business.tools._common import (
    NAME,
    REGISTRATION_NUMBER,
    name_similarity,
)

_EXAMPLE_NUMBER = "C40000000"


@tool(
    name="search_registry_by_name",
    description="Free-text search of the company registry by business name (all jurisdictions).",
    input_schema=arguments_schema(
        {"business_name": NAME}, examples=[{"business_name": "Northwind Logistics Ltd"}]
    ),
)
def search_registry_by_name(args: JSON, ctx: ToolContext) -> JSON:
    records = ctx.tables.frame("business_registry").to_dict("records")
    hits = sorted(
        (r for r in records if name_similarity(args["business_name"], r["legal_name"]) >= 80),
        key=lambda r: r["registration_number"],
    )
    return {
        "matches": [
            {"legal_name": r["legal_name"], "jurisdiction": r["jurisdiction"]} for r in hits[:5]
        ],
        "note": "name search is indicative; registration numbers are not disclosed here",
    }


@tool(
    name="screen_sanctions_legacy",
    description=(
        "Exact-match screen against the 2019 sanctions list snapshot (kept for audit "
        "reconstruction of historical cases)."
    ),
    input_schema=arguments_schema({"name": NAME}, examples=[{"name": "Radomir Vaskov"}]),
)
def screen_sanctions_legacy(args: JSON, ctx: ToolContext) -> JSON:
    return {"exact_match": False, "snapshot": "2019-06-30", "note": "snapshot is not updated"}


@tool(
    name="get_business_credit_rating",
    description="Return an indicative trade-credit rating for a registered company.",
    input_schema=arguments_schema(
        {"registration_number": REGISTRATION_NUMBER},
        examples=[{"registration_number": _EXAMPLE_NUMBER}],
    ),
)
def get_business_credit_rating(args: JSON, ctx: ToolContext) -> JSON:
    number = args["registration_number"]
    require_row(ctx, "business_registry", "registration_number", number, "company")
    grade = "ABCD"[int(hashlib.sha256(number.encode()).hexdigest(), 16) % 4]
    return {"registration_number": number, "credit_grade": grade, "provider": "TradeScore"}


@tool(
    name="check_adverse_media",
    description="Count news articles mentioning a name in the last 12 months.",
    input_schema=arguments_schema({"name": NAME}, examples=[{"name": "Northwind Logistics Ltd"}]),
)
def check_adverse_media(args: JSON, ctx: ToolContext) -> JSON:
    count = int(hashlib.sha256(args["name"].casefold().encode()).hexdigest(), 16) % 7
    return {"articles_found": count, "window_months": 12, "sentiment_scored": False}


DISTRACTORS = [
    search_registry_by_name,
    screen_sanctions_legacy,
    get_business_credit_rating,
    check_adverse_media,
]

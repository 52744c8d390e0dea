"""Callable tools that look useful for seller e-mails but that the SOP never needs."""

import hashlib

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.email_intent.tools._common import PRODUCT_ID, SELLER_ID

_POSITIVE = ("thanks", "thank you", "great", "appreciate", "happy")
_NEGATIVE = ("unacceptable", "frustrated", "angry", "disappointed", "problem")


def _unit(text: str) -> float:
    """A stable pseudo-random number in [0, 1) derived from ``text``."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0x1_0000_0000


@tool(
    name="classify_email_sentiment",
    description="Sentiment of an e-mail body (positive, neutral or negative) for CSAT reports.",
    input_schema=arguments_schema(
        {
            "email_id": {"type": "string", "pattern": "^EM-[0-9]{6}$"},
            "body": {"type": "string", "minLength": 1},
        },
        examples=[{"email_id": "EM-400000", "body": "Thanks for the quick help last week."}],
    ),
)
def classify_email_sentiment(args: JSON, ctx: ToolContext) -> JSON:
    text = args["body"].casefold()
    balance = sum(w in text for w in _POSITIVE) - sum(w in text for w in _NEGATIVE)
    label = "positive" if balance > 0 else "negative" if balance < 0 else "neutral"
    return {"sentiment": label, "polarity": balance}


@tool(
    name="get_product_reviews_summary",
    description="Average star rating and review count of a product's customer reviews.",
    input_schema=arguments_schema(
        {"product_id": PRODUCT_ID}, examples=[{"product_id": "B07XK2M9QP"}]
    ),
)
def get_product_reviews_summary(args: JSON, ctx: ToolContext) -> JSON:
    if ctx.tables.row("listings", "product_id", args["product_id"]) is None:
        return {"review_count": 0, "average_rating": None}
    seed = _unit(args["product_id"])
    return {"review_count": int(seed * 900) + 3, "average_rating": round(3 + 2 * seed, 1)}


@tool(
    name="lookup_competitor_offers",
    description="Offers from other sellers on the same product and the lowest offer price.",
    input_schema=arguments_schema(
        {"product_id": PRODUCT_ID}, examples=[{"product_id": "B07XK2M9QP"}]
    ),
)
def lookup_competitor_offers(args: JSON, ctx: ToolContext) -> JSON:
    prices = ctx.tables.row("pricing", "product_id", args["product_id"])
    if prices is None:
        return {"offer_count": 0, "lowest_offer_price": None}
    seed = _unit(args["product_id"])
    lowest = round(prices["reference_price"] * (0.9 + 0.15 * seed), 2)
    return {"offer_count": int(seed * 12), "lowest_offer_price": lowest}


@tool(
    name="get_seller_account_health",
    description="Seller account health rating and open policy warnings (account management).",
    input_schema=arguments_schema({"seller_id": SELLER_ID}, examples=[{"seller_id": "S100000"}]),
)
def get_seller_account_health(args: JSON, ctx: ToolContext) -> JSON:
    seller = require_row(ctx, "sellers", "seller_id", args["seller_id"])
    return {"account_health": seller["account_health"], "open_warnings": 0}


DISTRACTORS = [
    classify_email_sentiment,
    get_product_reviews_summary,
    lookup_competitor_offers,
    get_seller_account_health,
]

"""Feature extraction for a seller e-mail: intent keyword scores and quoted references.

Classification must be reproducible, so the scores are plain weighted keyword counts over
the subject and body; the SOP turns them into an intent with explicit thresholds.
"""

from __future__ import annotations

import re

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.email_intent.tools._common import SELLER_ID

PRICING_TERMS = {
    "price": 2,
    "prices": 2,
    "pricing": 2,
    "reprice": 2,
    "cost": 1,
    "discount": 1,
    "cheaper": 1,
    "expensive": 1,
    "competitor": 1,
    "competitors": 1,
    "msrp": 1,
    "markdown": 1,
}
DESCRIPTION_TERMS = {
    "description": 2,
    "title": 2,
    "bullet points": 2,
    "product details": 2,
    "typo": 1,
    "wording": 1,
    "misspelled": 1,
    "specifications": 1,
    "dimensions": 1,
    "ingredients": 1,
    "photos": 1,
    "images": 1,
}
LISTING_STATUS_TERMS = {
    "inactive": 2,
    "suppressed": 2,
    "deactivated": 2,
    "reactivate": 2,
    "listing status": 2,
    "search results": 1,
    "not showing": 1,
    "not visible": 1,
    "out of stock": 1,
    "stranded": 1,
    "live again": 1,
}
URGENCY_TERMS = {
    "urgent": 1,
    "urgently": 1,
    "asap": 1,
    "immediately": 1,
    "as soon as possible": 1,
    "right away": 1,
    "losing sales": 1,
}
PROHIBITED_CLAIMS = [
    "cure",
    "cures",
    "fda approved",
    "miracle",
    "guaranteed results",
    "risk free",
    "clinically proven",
]
PRODUCT_ID_RE = re.compile(r"\bB0[0-9A-Z]{8}\b")
AMOUNT_RE = re.compile(r"\$\s?([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(\.[0-9]{1,2})?")
_SPACES = re.compile(r"\s+")


def _pattern(term: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![a-z0-9]){re.escape(term)}(?![a-z0-9])")


_COMPILED = {
    term: _pattern(term)
    for terms in (PRICING_TERMS, DESCRIPTION_TERMS, LISTING_STATUS_TERMS, URGENCY_TERMS)
    for term in terms
} | {term: _pattern(term) for term in PROHIBITED_CLAIMS}


def score(text: str, terms: dict[str, int]) -> tuple[int, list[str]]:
    """Sum of weight x occurrences over ``terms``, and the terms found (in list order)."""
    total, found = 0, []
    for term, weight in terms.items():
        hits = len(_COMPILED[term].findall(text))
        if hits:
            total += weight * hits
            found.append(term)
    return total, found


def amounts(text: str) -> list[float]:
    """Dollar amounts in the order written ("$1,299.00" -> 1299.0)."""
    return [
        float(m.group(1).replace(",", "") + (m.group(2) or "")) for m in AMOUNT_RE.finditer(text)
    ]


def product_ids(text: str) -> list[str]:
    """Distinct product ids in order of first mention."""
    return list(dict.fromkeys(PRODUCT_ID_RE.findall(text)))


@tool(
    name="extract_email_features",
    description=(
        "Step 1 of seller e-mail handling. Extract features from a seller e-mail: weighted "
        "keyword scores for pricing, description and listing-status topics and for urgency, "
        "the product ids and dollar amounts quoted (in order of appearance) and any "
        "prohibited marketing claims. Reads the subject and the body."
    ),
    input_schema=arguments_schema(
        {
            "email_id": {"type": "string", "pattern": "^EM-[0-9]{6}$"},
            "seller_id": SELLER_ID,
            "subject": {"type": "string", "minLength": 1, "maxLength": 300},
            "body": {"type": "string", "minLength": 1, "maxLength": 10000},
        }
    ),
    output_schema={
        "type": "object",
        "properties": {
            "pricing_score": {"type": "integer", "minimum": 0},
            "description_score": {"type": "integer", "minimum": 0},
            "listing_status_score": {"type": "integer", "minimum": 0},
            "urgency_score": {"type": "integer", "minimum": 0},
            "matched_terms": {"type": "object"},
            "product_ids": {"type": "array", "items": {"type": "string"}},
            "price_amounts": {"type": "array", "items": {"type": "number"}},
            "prohibited_claims": {"type": "array", "items": {"type": "string"}},
            "word_count": {"type": "integer"},
        },
        "required": [
            "pricing_score",
            "description_score",
            "listing_status_score",
            "urgency_score",
            "product_ids",
            "price_amounts",
            "prohibited_claims",
        ],
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "sellers", "seller_id", args["seller_id"])
    original = f"{args['subject']}\n{args['body']}"
    text = _SPACES.sub(" ", original.casefold())
    scores, matched = {}, {}
    for topic, terms in (
        ("pricing", PRICING_TERMS),
        ("description", DESCRIPTION_TERMS),
        ("listing_status", LISTING_STATUS_TERMS),
        ("urgency", URGENCY_TERMS),
    ):
        scores[f"{topic}_score"], matched[topic] = score(text, terms)
    return {
        **scores,
        "matched_terms": matched,
        "product_ids": product_ids(original),
        "price_amounts": amounts(original),
        "prohibited_claims": [c for c in PROHIBITED_CLAIMS if _COMPILED[c].search(text)],
        "word_count": len(original.split()),
    }

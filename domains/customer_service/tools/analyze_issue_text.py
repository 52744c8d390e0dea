"""Keyword analysis of the customer's issue text: hit counts per symptom family (step 3).

The tool only counts; choosing the category (most hits, fixed tie order, none -> general) is
the SOP's rule, so an agent has to apply it rather than read a label.
"""

import re

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.customer_service.tools._common import ACCOUNT_ID

LEXICON: dict[str, tuple[str, ...]] = {
    "no_service": (
        "no internet",
        "no service",
        "no signal",
        "no connection",
        "completely down",
        "cannot connect",
        "totally dead",
        "offline",
    ),
    "intermittent": (
        "drops",
        "dropping",
        "disconnects",
        "cuts out",
        "on and off",
        "intermittent",
        "unstable",
        "keeps reconnecting",
    ),
    "slow_speed": (
        "slow",
        "buffering",
        "lag",
        "laggy",
        "sluggish",
        "forever",
        "crawling",
    ),
}
_PATTERNS = {
    term: re.compile(rf"\b{re.escape(term)}\b", re.IGNORECASE)
    for terms in LEXICON.values()
    for term in terms
}


def keyword_hits(text: str) -> tuple[dict[str, int], list[str]]:
    """Occurrences per family, and the distinct matched terms in lexicon order."""
    hits = dict.fromkeys(LEXICON, 0)
    matched: list[str] = []
    for family, terms in LEXICON.items():
        for term in terms:
            count = len(_PATTERNS[term].findall(text))
            if count:
                hits[family] += count
                matched.append(term)
    return hits, matched


@tool(
    name="analyze_issue_text",
    description=(
        "Scan the customer's issue description for symptom keywords and return how many "
        "keyword occurrences fall into each symptom family (no_service, intermittent, "
        "slow_speed) and which terms matched."
    ),
    input_schema=arguments_schema(
        {
            "account_id": ACCOUNT_ID,
            "issue_description": {"type": "string", "minLength": 1, "maxLength": 4000},
        }
    ),
    output_schema=result_schema(
        {
            "keyword_hits": result_schema({family: {"type": "integer"} for family in LEXICON}),
            "matched_terms": {"type": "array", "items": {"type": "string"}},
            "word_count": {"type": "integer"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    text = args["issue_description"]
    hits, matched = keyword_hits(text)
    return {"keyword_hits": hits, "matched_terms": matched, "word_count": len(text.split())}

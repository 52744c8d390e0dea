"""Content Severity Index: how harmful the flagged content is, on a 0.0-10.0 scale.

Computed in tenths (integers, half-up rounding) so that the one-decimal index the SOP
thresholds is exact. The poster's trust score from step 2 enters as a small adjustment:
the same words from an account with a poor record carry more risk.
"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.content_flagging.tools._common import (
    CONTENT_ID,
    COUNT,
    USER_TRUST_SCORE,
    points_for,
)

CATEGORY_BASE = {  # tenths of an index point
    "spam": 20,
    "misinformation": 30,
    "adult_content": 35,
    "harassment": 40,
    "hate_speech": 55,
    "violent_threat": 65,
}
REPORT_BANDS = [(3, 0), (10, 5), (50, 10)]
REPORT_ABOVE = 15
REACH_BANDS = [(1_000, 0), (100_000, 5)]
REACH_ABOVE = 10
TRUST_BANDS = [(40, 10), (70, 0)]
TRUST_ABOVE = -5


def weighted_base(category: str, confidence: float) -> int:
    """Category base scaled by (0.5 + classifier confidence), half-up, in tenths."""
    percent = round(confidence * 100)
    return (CATEGORY_BASE[category] * (50 + percent) + 50) // 100


@tool(
    name="compute_content_severity",
    description=(
        "Step 3 of content flagging. Compute the Content Severity Index (0.0-10.0, one "
        "decimal) of flagged content from its violation category, the upstream classifier's "
        "confidence, the number of user reports, its audience reach and the poster's User "
        "Trust Score from step 2. Returns the index and the points of each factor."
    ),
    input_schema=arguments_schema(
        {
            "content_id": CONTENT_ID,
            "violation_category": {"type": "string", "enum": list(CATEGORY_BASE)},
            "classifier_confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "report_count": COUNT,
            "audience_reach": COUNT,
            "user_trust_score": USER_TRUST_SCORE,
        }
    ),
    output_schema=result_schema(
        {
            "content_severity_index": {"type": "number", "minimum": 0, "maximum": 10},
            "factor_points": {
                "type": "object",
                "properties": {
                    k: {"type": "number"}
                    for k in ("category", "reports", "reach", "trust_adjustment")
                },
            },
            "content_type": {"type": "string"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    content = require_row(ctx, "contents", "content_id", args["content_id"])
    tenths = {
        "category": weighted_base(args["violation_category"], args["classifier_confidence"]),
        "reports": points_for(args["report_count"], REPORT_BANDS, REPORT_ABOVE),
        "reach": points_for(args["audience_reach"], REACH_BANDS, REACH_ABOVE),
        "trust_adjustment": points_for(args["user_trust_score"], TRUST_BANDS, TRUST_ABOVE),
    }
    total = max(0, min(100, sum(tenths.values())))
    return {
        "content_severity_index": total / 10,
        "factor_points": {k: v / 10 for k, v in tenths.items()},
        "content_type": content["content_type"],
    }

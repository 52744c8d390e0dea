"""User Trust Score: account history tempered by the bot probability found in step 1."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.content_flagging.tools._common import (
    BOT_PROBABILITY_INDEX,
    COUNT,
    USER_ID,
    points_for,
)

BASE_SCORE = 50
ACCOUNT_AGE_BANDS = [(30, -15), (365, 0), (1095, 10)]  # days since sign-up
ACCOUNT_AGE_ABOVE = 15
VERIFIED_POINTS = 15
POINTS_PER_VIOLATION, MAX_VIOLATION_PENALTY = 10, 40
POINTS_PER_APPEAL, MAX_APPEAL_BONUS = 5, 10
BOT_PENALTY_WEIGHT = 40  # points removed at a Bot Probability Index of 1.00


@tool(
    name="compute_user_trust_score",
    description=(
        "Step 2 of content flagging. Compute the User Trust Score (integer 0-100) of the "
        "posting account from its age, identity verification, confirmed prior violations, "
        "successful appeals and the Bot Probability Index from step 1. Returns the score and "
        "its components."
    ),
    input_schema=arguments_schema(
        {
            "user_id": USER_ID,
            "bot_probability_index": BOT_PROBABILITY_INDEX,
            "account_age_days": COUNT,
            "identity_verified": {"type": "boolean"},
            "prior_violations": COUNT,
            "successful_appeals": COUNT,
        }
    ),
    output_schema=result_schema(
        {
            "user_trust_score": {"type": "integer", "minimum": 0, "maximum": 100},
            "components": {
                "type": "object",
                "properties": {
                    k: {"type": "integer"}
                    for k in (
                        "base",
                        "account_age",
                        "identity",
                        "violations",
                        "appeals",
                        "bot_penalty",
                    )
                },
            },
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    require_row(ctx, "users", "user_id", args["user_id"])
    components = {
        "base": BASE_SCORE,
        "account_age": points_for(args["account_age_days"], ACCOUNT_AGE_BANDS, ACCOUNT_AGE_ABOVE),
        "identity": VERIFIED_POINTS if args["identity_verified"] else 0,
        "violations": -min(args["prior_violations"] * POINTS_PER_VIOLATION, MAX_VIOLATION_PENALTY),
        "appeals": min(args["successful_appeals"] * POINTS_PER_APPEAL, MAX_APPEAL_BONUS),
        "bot_penalty": -round(args["bot_probability_index"] * BOT_PENALTY_WEIGHT),
    }
    score = max(0, min(100, sum(components.values())))
    return {"user_trust_score": score, "components": components}

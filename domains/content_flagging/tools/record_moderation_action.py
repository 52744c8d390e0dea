"""Final dispositioning: record the action on the flag and report the account's strikes.

The tool does not choose the action (the SOP's decision matrix does); it enforces what it is
given and returns the facts the SOP needs for the account outcome, such as the number of
active strikes once this action is counted.
"""

import hashlib

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, tool
from sopgym.domains.content_flagging.tools._common import (
    BOT_PROBABILITY_INDEX,
    CONTENT_SEVERITY_INDEX,
    FLAG_ID,
    USER_ID,
    USER_TRUST_SCORE,
)

ACTIONS = ["allow", "warn", "remove", "ban"]
STRIKING_ACTIONS = {"warn", "remove"}
VISIBILITY = {
    "allow": "visible",
    "warn": "visible_with_notice",
    "remove": "removed",
    "ban": "removed",
}


@tool(
    name="record_moderation_action",
    description=(
        "Step 4 of content flagging. Apply and record the moderation action chosen for a flag, "
        "together with the three scores it was based on (audit trail). Returns the case "
        "reference, the content's visibility, whether a strike was added and the account's "
        "active strikes after this action."
    ),
    input_schema=arguments_schema(
        {
            "flag_id": FLAG_ID,
            "user_id": USER_ID,
            "action": {"type": "string", "enum": ACTIONS},
            "bot_probability_index": BOT_PROBABILITY_INDEX,
            "user_trust_score": USER_TRUST_SCORE,
            "content_severity_index": CONTENT_SEVERITY_INDEX,
        }
    ),
    output_schema={
        "type": "object",
        "properties": {
            "recorded": {"type": "boolean"},
            "case_reference": {"type": "string"},
            "content_id": {"type": "string"},
            "content_visibility": {"type": "string", "enum": sorted(set(VISIBILITY.values()))},
            "strike_added": {"type": "boolean"},
            "active_strikes": {"type": "integer", "minimum": 0},
        },
        "required": ["recorded", "case_reference", "strike_added", "active_strikes"],
    },
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    flag = require_row(ctx, "flags", "flag_id", args["flag_id"])
    if flag["user_id"] != args["user_id"]:
        raise ToolError(
            "invalid_value", f"flag {args['flag_id']} was not raised on this user", "user_id"
        )
    user = require_row(ctx, "users", "user_id", args["user_id"])
    strike = args["action"] in STRIKING_ACTIONS
    audit = "|".join(str(args[k]) for k in sorted(args))
    digest = hashlib.sha256(audit.encode()).hexdigest()[:10].upper()
    return {
        "recorded": True,
        "case_reference": f"MOD-{digest}",
        "content_id": flag["content_id"],
        "content_visibility": VISIBILITY[args["action"]],
        "strike_added": strike,
        "active_strikes": user["active_strikes"] + (1 if strike else 0),
    }

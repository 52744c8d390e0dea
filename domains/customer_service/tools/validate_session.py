"""Session-token lookup: the facts the SOP's authentication rule needs (step 1)."""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.customer_service.tools._common import (
    ACCOUNT_ID,
    NULLABLE_TIMESTAMP,
    SESSION_TOKEN,
)

_FIELDS = ("token_account_id", "issued_at", "expires_at", "revoked")


@tool(
    name="validate_session",
    description=(
        "Look up the session token attached to a support request in the identity service: "
        "whether it exists, which account it was issued to, when it was issued and expires, "
        "and whether it has been revoked."
    ),
    input_schema=arguments_schema({"account_id": ACCOUNT_ID, "session_token": SESSION_TOKEN}),
    output_schema=result_schema(
        {
            "token_found": {"type": "boolean"},
            "token_account_id": {"type": ["string", "null"]},
            "issued_at": NULLABLE_TIMESTAMP,
            "expires_at": NULLABLE_TIMESTAMP,
            "revoked": {"type": ["boolean", "null"]},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    session = ctx.tables.row("sessions", "session_token", args["session_token"])
    if session is None:
        return {"token_found": False, **dict.fromkeys(_FIELDS)}
    return {"token_found": True, **{key: session[key] for key in _FIELDS}}

"""What the ledger tools share: the account id schema and the state's bookkeeping."""

from __future__ import annotations

from sopgym.core.errors import ToolError
from sopgym.core.tools import ToolContext, not_found
from sopgym.types import JSON

ACCOUNT_ID = {"type": "string", "pattern": "^ACC-[0-9]{4}$"}
AMOUNT = {"type": "integer", "minimum": 1}


def account(ctx: ToolContext, account_id: str) -> JSON:
    """The episode's own (mutable) row of ``account_id``."""
    assert ctx.state is not None, "ledger tools act on an episode's state"
    for row in ctx.state["accounts"]:
        if row["account_id"] == account_id:
            return row
    raise not_found("account", "account_id", account_id)


def available(ctx: ToolContext, row: JSON) -> int:
    """The balance less every hold placed on the account."""
    assert ctx.state is not None
    held = sum(h["amount"] for h in ctx.state["holds"] if h["account_id"] == row["account_id"])
    return int(row["balance"] - held)


def active(row: JSON, field: str) -> None:
    if row["status"] != "active":
        raise ToolError("invalid_value", f"account {row['account_id']} is {row['status']}", field)

"""Reading an account, and the two writes the SOP allows: a transfer and a hold."""

from __future__ import annotations

from sopgym.core.errors import ToolError
from sopgym.core.tools import ToolContext, arguments_schema, result_schema, tool
from sopgym.types import JSON
from tests.testpacks.ledger.tools._common import ACCOUNT_ID, AMOUNT, account, active, available

_MONEY = {"type": "integer"}


@tool(
    name="get_account",
    description="Look up an account in this book: owner, status, balance and the balance "
    "available after holds.",
    input_schema=arguments_schema({"account_id": ACCOUNT_ID}),
    output_schema=result_schema({
        "account_id": {"type": "string"},
        "owner": {"type": "string"},
        "status": {"enum": ["active", "frozen"]},
        "balance": _MONEY,
        "available": _MONEY,
    }),
)
def get_account(args: JSON, ctx: ToolContext) -> JSON:
    row = account(ctx, args["account_id"])
    return {
        "account_id": row["account_id"],
        "owner": row["owner"],
        "status": row["status"],
        "balance": row["balance"],
        "available": available(ctx, row),
    }


@tool(
    name="transfer_funds",
    description="Move an amount from one active account to another; the payer's available "
    "balance must cover it.",
    input_schema=arguments_schema(
        {"from_account": ACCOUNT_ID, "to_account": ACCOUNT_ID, "amount": AMOUNT}
    ),
    output_schema=result_schema({
        "transfer_id": {"type": "string"},
        "from_balance": _MONEY,
        "to_balance": _MONEY,
    }),
)
def transfer_funds(args: JSON, ctx: ToolContext) -> JSON:
    assert ctx.state is not None
    payer, payee = account(ctx, args["from_account"]), account(ctx, args["to_account"])
    if payer is payee:
        raise ToolError("invalid_value", "payer and payee are the same account", "to_account")
    active(payer, "from_account")
    active(payee, "to_account")
    if args["amount"] > available(ctx, payer):
        raise ToolError("invalid_value", "the payer's available balance is too low", "amount")
    payer["balance"] -= args["amount"]
    payee["balance"] += args["amount"]
    transfers = ctx.state["transfers"]
    transfer_id = f"T-{len(transfers) + 1:03d}"
    transfers.append({"transfer_id": transfer_id, "from_account": payer["account_id"],
                      "to_account": payee["account_id"], "amount": args["amount"]})  # fmt: skip
    return {"transfer_id": transfer_id, "from_balance": payer["balance"],
            "to_balance": payee["balance"]}  # fmt: skip


@tool(
    name="place_hold",
    description="Reserve an amount on an active account until a reviewer releases it.",
    input_schema=arguments_schema({"account_id": ACCOUNT_ID, "amount": AMOUNT}),
    output_schema=result_schema({"hold_id": {"type": "string"}, "available": _MONEY}),
)
def place_hold(args: JSON, ctx: ToolContext) -> JSON:
    assert ctx.state is not None
    row = account(ctx, args["account_id"])
    active(row, "account_id")
    holds = ctx.state["holds"]
    hold_id = f"H-{len(holds) + 1:03d}"
    holds.append({"hold_id": hold_id, "account_id": row["account_id"], "amount": args["amount"]})
    return {"hold_id": hold_id, "available": available(ctx, row)}

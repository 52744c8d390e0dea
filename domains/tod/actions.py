"""The agent's actions: 32 customer-service tools over a per-episode state, and ``no_action``.

The state is one customer's world: ``{"account": {...}, "orders": [{...}], "records": []}``.
Read actions return facts (a key named like a system fact in :mod:`.facts` reveals it);
write actions change the account or an order, or file a record (a note, an escalation).
Every action is declared once in :data:`SPECS`; the tools are built from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from sopgym.core.tools import Tool, ToolContext, arguments_schema, not_found, result_schema, tool
from sopgym.types import JSON

PARAMS: Final[dict[str, JSON]] = {
    "account_id": {"type": "string", "pattern": "^AC-[0-9]{5}$"},
    "order_id": {"type": "string", "pattern": "^OR-[0-9]{5}$"},
    "zip_code": {"type": "string", "pattern": "^[0-9]{5}$"},
    "email": {"type": "string", "pattern": "^[^@ ]+@[^@ ]+$"},
    "new_address": {"type": "string", "minLength": 5, "maxLength": 120},
    "topic": {"type": "string", "minLength": 2, "maxLength": 60},
    "reason": {"type": "string", "minLength": 2, "maxLength": 60},
    "team": {"type": "string", "enum": ["billing", "shipping", "technical", "returns"]},
    "why": {"type": "string", "enum": ["awaiting_customer", "goal_met"]},
}
Effect = Callable[[JSON, JSON], JSON]  # (state, arguments) -> result


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    params: tuple[str, ...]
    result: JSON  # result key -> JSON schema
    effect: Effect


def account(state: JSON, args: JSON) -> JSON:
    row: JSON = state["account"]
    if row["account_id"] != args["account_id"]:
        raise not_found("account", "account_id", args["account_id"])
    return row


def order(state: JSON, args: JSON) -> JSON:
    for row in state["orders"]:
        if row["order_id"] == args["order_id"]:
            return row
    raise not_found("order", "order_id", args["order_id"])


def _record(kind: str, *keys: str) -> Effect:
    def effect(state: JSON, args: JSON) -> JSON:
        (account if "account_id" in args else order)(state, args)
        state["records"].append({"kind": kind, **{k: args[k] for k in keys}})
        return {"record_id": f"RC-{len(state['records']):03d}"}

    return effect


def _set(target: str, field: str, value: Any, out: str) -> Effect:
    """Write ``field`` of the account or the order; ``value`` is fixed, or the argument it
    names when it starts with ``$``."""

    def effect(state: JSON, args: JSON) -> JSON:
        row = (account if target == "account" else order)(state, args)
        row[field] = args[value[1:]] if isinstance(value, str) and value.startswith("$") else value
        return {out: row[field]}

    return effect


def _read(target: str, *fields: str) -> Effect:
    def effect(state: JSON, args: JSON) -> JSON:
        row = (account if target == "account" else order)(state, args)
        return {f: row[f] for f in fields}

    return effect


def _verify(state: JSON, args: JSON) -> JSON:
    return {"identity_verified": account(state, args)["zip_code"] == args["zip_code"]}


def _refund(state: JSON, args: JSON) -> JSON:
    row = order(state, args)
    row["refund"] = {"amount": row["amount"], "to": row["payment_method"]}
    return {"refunded": row["amount"], "to": row["payment_method"]}


def _knowledge(kind: str) -> Effect:
    def effect(state: JSON, args: JSON) -> JSON:
        return {"article": f"{kind}: {args['topic']}"}

    return effect


_S, _B, _I = {"type": "string"}, {"type": "boolean"}, {"type": "integer"}
_ANY = {"type": ["string", "number", "boolean", "object", "null"]}
_REC = {"record_id": _S}
SPECS: Final = (
    ActionSpec("pull_up_account", "Open the customer's account: name, status and email.",
               ("account_id",), {"name": _S, "account_status": _S, "email": _S},
               _read("account", "name", "account_status", "email")),
    ActionSpec("verify_identity", "Check the zip code the customer gave against the account.",
               ("account_id", "zip_code"), {"identity_verified": _B}, _verify),
    ActionSpec("membership_lookup", "The account's membership level.", ("account_id",),
               {"membership": _S}, _read("account", "membership")),
    ActionSpec("unlock_account", "Unlock a locked account.", ("account_id",),
               {"account_status": _S}, _set("account", "account_status", "active",
                                            "account_status")),
    ActionSpec("reset_password", "Send a password reset to the account's email.",
               ("account_id",), {"password_reset": _B},
               _set("account", "password_reset", True, "password_reset")),
    ActionSpec("send_username", "Email the account's username to the given address.",
               ("account_id", "email"), _REC, _record("username_sent", "email")),
    ActionSpec("update_email", "Change the account's email address.", ("account_id", "email"),
               {"email": _S}, _set("account", "email", "$email", "email")),
    ActionSpec("log_out_everywhere", "End every open session of the account.",
               ("account_id",), {"sessions": _I}, _set("account", "sessions", 0, "sessions")),
    ActionSpec("subscription_status", "The account's subscription status.", ("account_id",),
               {"subscription": _S}, _read("account", "subscription")),
    ActionSpec("renew_subscription", "Renew the account's subscription.", ("account_id",),
               {"subscription": _S}, _set("account", "subscription", "active", "subscription")),
    ActionSpec("cancel_subscription", "Cancel the account's subscription.", ("account_id",),
               {"subscription": _S},
               _set("account", "subscription", "cancelled", "subscription")),
    ActionSpec("validate_purchase", "Check an order: its status, days since purchase and "
               "payment method.", ("order_id",),
               {"order_status": _S, "days_since_purchase": _I, "payment_method": _S},
               _read("order", "order_status", "days_since_purchase", "payment_method")),
    ActionSpec("shipping_status", "Where an order is.", ("order_id",), {"order_status": _S},
               _read("order", "order_status")),
    ActionSpec("check_stock", "Whether the order's item is in stock for an exchange.",
               ("order_id",), {"in_stock": _B}, _read("order", "in_stock")),
    ActionSpec("update_address", "Change the shipping address of an order.",
               ("order_id", "new_address"), {"address": _S},
               _set("order", "address", "$new_address", "address")),
    ActionSpec("expedite_shipping", "Upgrade an order to express shipping.", ("order_id",),
               {"shipping": _S}, _set("order", "shipping", "express", "shipping")),
    ActionSpec("cancel_order", "Cancel an order that has not shipped.", ("order_id",),
               {"order_status": _S}, _set("order", "order_status", "cancelled",
                                          "order_status")),
    ActionSpec("offer_refund", "Refund an order in full to its payment method.", ("order_id",),
               {"refunded": {"type": "number"}, "to": _S}, _refund),
    ActionSpec("issue_store_credit", "Give store credit for an order instead of a refund.",
               ("order_id",), {"store_credit": _B},
               _set("order", "store_credit", True, "store_credit")),
    ActionSpec("exchange_item", "Send a replacement of the order's item.", ("order_id",),
               {"exchange": _B}, _set("order", "exchange", True, "exchange")),
    ActionSpec("make_shipping_label", "Create a return shipping label for an order.",
               ("order_id",), {"label": _B}, _set("order", "return_label", True, "label")),
    ActionSpec("reship_order", "Ship an order again (lost or missing parcels).", ("order_id",),
               {"reshipped": _B}, _set("order", "reshipped", True, "reshipped")),
    ActionSpec("record_reason", "Record why the customer wants to return an order.",
               ("order_id", "reason"), _REC, _record("return_reason", "order_id", "reason")),
    ActionSpec("offer_promo_code", "Give the account a promotional code.", ("account_id",),
               _REC, _record("promo_code", "account_id")),
    ActionSpec("search_faq", "Look a question up in the help centre.", ("topic",),
               {"article": _S}, _knowledge("faq")),
    ActionSpec("search_policy", "Look a store policy up.", ("topic",), {"article": _S},
               _knowledge("policy")),
    ActionSpec("search_product", "Look product information up.", ("topic",), {"article": _S},
               _knowledge("product")),
    ActionSpec("notify_manager", "Escalate the account's case to a manager.",
               ("account_id", "reason"), _REC, _record("manager", "account_id", "reason")),
    ActionSpec("notify_team", "Hand the case to a team.", ("account_id", "team"), _REC,
               _record("team", "account_id", "team")),
    ActionSpec("schedule_callback", "Book a callback to the customer.", ("account_id",), _REC,
               _record("callback", "account_id")),
    ActionSpec("send_troubleshooting_link", "Email a troubleshooting guide on a topic.",
               ("account_id", "topic"), _REC, _record("guide", "account_id", "topic")),
    ActionSpec("add_note", "Add a note to the account.", ("account_id", "reason"), _REC,
               _record("note", "account_id", "reason")),
    ActionSpec("no_action", "Take no action now: say why (waiting for the customer to say "
               "something, or the customer's goal is met).", ("why",), {"why": _S},
               lambda state, args: {"why": args["why"]}),
)
NO_ACTION: Final = "no_action"
# actions that only read: a customer never objects to them
READS: Final = frozenset({"pull_up_account", "verify_identity", "membership_lookup",
                          "subscription_status", "validate_purchase", "shipping_status",
                          "check_stock", "search_faq", "search_policy", "search_product",
                          NO_ACTION})


def _build(spec: ActionSpec) -> Tool:
    @tool(name=spec.name, description=spec.description,
          input_schema=arguments_schema({p: PARAMS[p] for p in spec.params}, examples=(
              [{"why": "goal_met"}] if spec.name == NO_ACTION else None)),
          output_schema=result_schema(spec.result))  # fmt: skip
    def run(args: JSON, ctx: ToolContext) -> JSON:
        assert ctx.state is not None, "TOD actions act on an episode's state"
        return spec.effect(ctx.state, args)

    return run


TOOLS: Final = [_build(spec) for spec in SPECS]
# live episodes act only: there, ``no_action`` is a tool the procedure never needs
ACTING: Final = [t for t in TOOLS if t.name != NO_ACTION]
IDLE: Final = [t for t in TOOLS if t.name == NO_ACTION]
WRITES: Final = tuple(sorted(spec.name for spec in SPECS if spec.name not in READS))


def reported(text: str) -> list[str]:
    """The write actions an agent turn says it took (``offer_refund`` or ``offer refund``)."""
    lowered = text.lower()
    return [a for a in WRITES if a in lowered or a.replace("_", " ") in lowered]

"""The seller e-mail SOP as code: the reference policy that derives every label."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

INTENT_THRESHOLD = 3
# SOP §4: topic scores in tie-break precedence order.
TOPICS = [
    ("listing_status", "listing_status_score"),
    ("pricing", "pricing_score"),
    ("description_change", "description_score"),
]
MAX_DEVIATION_PERCENT = 50.0
URGENT_SCORE = 2


def classify(features: dict) -> tuple[str, bool]:
    """SOP §4: the top topic if it scores at least 3, ties broken by precedence.

    Returns the intent and whether a tie had to be broken.
    """
    top = max(features[key] for _, key in TOPICS)
    if top < INTENT_THRESHOLD:
        return "general", False
    leaders = [intent for intent, key in TOPICS if features[key] == top]
    return leaders[0], len(leaders) > 1


def product_check(features: dict, run: PolicyRun, seller_id: str) -> tuple[str, dict | None]:
    """SOP §5: exactly one quoted product, found in the catalogue and owned by the sender."""
    ids = features["product_ids"]
    if not ids:
        return "missing_reference", None
    if len(ids) > 1:
        return "multiple_references", None
    listing = run.call("get_product_listing", seller_id=seller_id, product_id=ids[0])
    if not listing["listing_found"]:
        return "not_found", listing
    if listing["owner_seller_id"] != seller_id:
        return "seller_mismatch", listing
    return "verified", listing


def pricing_action(features: dict, run: PolicyRun, seller_id: str, product_id: str) -> str:
    """SOP §6.1: the last quoted amount is the requested price."""
    if not features["price_amounts"]:
        return "request_information"
    check = run.call(
        "check_pricing_rules",
        seller_id=seller_id,
        product_id=product_id,
        requested_price=features["price_amounts"][-1],
    )
    if features["price_amounts"][-1] < check["minimum_allowed_price"]:
        return "reject_request"
    if check["deviation_from_reference_percent"] > MAX_DEVIATION_PERCENT:
        return "escalate_to_specialist"
    return "apply_price_update"


def description_action(features: dict, listing: dict) -> str:
    """SOP §6.2: brand-gated categories first, then prohibited claims."""
    if listing["brand_gated"]:
        return "escalate_to_specialist"
    if features["prohibited_claims"]:
        return "reject_request"
    return "apply_description_update"


def listing_action(listing: dict, run: PolicyRun, seller_id: str, product_id: str) -> str:
    """SOP §6.3: explain a live listing, escalate policy holds, relist when stock exists."""
    if listing["listing_status"] == "active":
        return "send_status_update"
    if listing["status_reason"] == "policy_violation":
        return "escalate_to_specialist"
    stock = run.call("get_inventory_status", seller_id=seller_id, product_id=product_id)
    return "reactivate_listing" if stock["fulfillable_units"] > 0 else "request_restock"


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    seller_id = x["seller_id"]
    features = run.call(
        "extract_email_features",
        email_id=x["email_id"],
        seller_id=seller_id,
        subject=x["subject"],
        body=x["body"],
    )
    intent, tie_broken = classify(features)

    if intent == "general":
        check, action = "not_required", "forward_to_seller_support"
    else:
        check, listing = product_check(features, run, seller_id)
        if check in ("missing_reference", "multiple_references", "not_found"):
            action = "request_information"
        elif check == "seller_mismatch":
            action = "reject_request"
        else:
            assert listing is not None
            product_id = features["product_ids"][0]
            if intent == "pricing":
                action = pricing_action(features, run, seller_id, product_id)
            elif intent == "description_change":
                action = description_action(features, listing)
            else:
                action = listing_action(listing, run, seller_id, product_id)

    urgent = features["urgency_score"] >= URGENT_SCORE
    priority = "high" if urgent or action == "escalate_to_specialist" else "normal"
    return Solution(
        outputs={
            "email_intent": intent,
            "product_check": check,
            "resolution_action": action,
            "priority": priority,
        },
        decisions={
            "scores": {key: features[key] for _, key in TOPICS},
            "tie_broken": tie_broken,
            "below_threshold": intent == "general" and any(features[key] for _, key in TOPICS),
            "urgency_score": features["urgency_score"],
            "requested_price": (features["price_amounts"] or [None])[-1],
        },
    )

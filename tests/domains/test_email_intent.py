"""Hand-checked cases of the seller e-mail reference policy, its feature extraction and the
tools' refusals. Scores in the comments were counted by hand from the tool's term weights."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from sopgym.core.domain import PolicyRun
from sopgym.core.registry import load_domain
from sopgym.core.tables import Tables
from sopgym.core.tasks import Task
from sopgym.core.tools import ToolContext
from tests.domains.refusals import assert_refused

DOMAIN = load_domain("email_intent")
SELLER, OTHER = "S100000", "S100001"

# product suffix -> (owner, category, status, reason, fulfillable units)
PRODUCTS = {
    "1": (SELLER, "Kitchen", "active", None, 50),
    "2": (SELLER, "Toys", "inactive", "out_of_stock", 12),
    "3": (SELLER, "Garden", "inactive", "policy_violation", 50),
    "4": (OTHER, "Kitchen", "active", None, 50),
    "5": (SELLER, "Beauty", "active", None, 50),
    "6": (SELLER, "Sports", "inactive", "out_of_stock", 0),
}


def pid(suffix: str) -> str:
    return f"B0AAAAAAA{suffix}"


def _tables() -> Tables:
    sellers = [
        {"seller_id": s, "business_name": f"Shop {s}", "account_health": "good"}
        for s in (SELLER, OTHER)
    ]
    listings, pricing, inventory = [], [], []
    for suffix, (owner, category, status, reason, units) in PRODUCTS.items():
        listings.append(
            {
                "product_id": pid(suffix),
                "seller_id": owner,
                "title": f"Item {suffix}",
                "category": category,
                "listing_status": status,
                "status_reason": reason,
                "brand_gated": category == "Beauty",
            }
        )
        pricing.append(
            {
                "product_id": pid(suffix),
                "current_price": 110.0,
                "minimum_allowed_price": 70.0,
                "reference_price": 100.0,
            }
        )
        inventory.append(
            {
                "product_id": pid(suffix),
                "fulfillable_units": units,
                "inbound_units": 0,
                "reserved_units": 0,
                "last_restock_date": "2026-01-01",
            }
        )
    return Tables(
        {
            "sellers": pd.DataFrame(sellers),
            "listings": pd.DataFrame(listings),
            "pricing": pd.DataFrame(pricing),
            "inventory": pd.DataFrame(inventory),
        }
    )


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> ToolContext:
    return DOMAIN.context(_tables(), tmp_path_factory.mktemp("files"))


def _solve(ctx: ToolContext, subject: str, body: str) -> tuple[tuple[str, ...], list[str]]:
    inputs = {
        "email_id": "EM-400001",
        "seller_id": SELLER,
        "received_at": "2026-04-01",
        "subject": subject,
        "body": body,
    }
    run = PolicyRun(DOMAIN.tool_map(), ctx)
    outputs = DOMAIN.solve(Task(id="t", domain="email_intent", inputs=inputs), run).outputs
    fields = ("email_intent", "product_check", "resolution_action", "priority")
    return tuple(outputs[f] for f in fields), [c.name for c in run.calls]


FEATURES = ["extract_email_features"]
LISTING = [*FEATURES, "get_product_listing"]
PRICING = [*LISTING, "check_pricing_rules"]
STOCK = [*LISTING, "get_inventory_status"]

CASES = [
    pytest.param(  # P: price 2 + price 2 = 4; $95 >= floor 70, deviation -5.0
        "Price update request",
        f"Please change the price of {pid('1')}. It is $110.00 now; please make it $95.00.",
        ("pricing", "verified", "apply_price_update", "normal"),
        PRICING,
        id="pricing-apply",
    ),
    pytest.param(  # last amount $60 is below the 70 floor
        "Price update request",
        f"Please change the price of {pid('1')} to $60.00.",
        ("pricing", "verified", "reject_request", "normal"),
        PRICING,
        id="pricing-below-floor",
    ),
    pytest.param(  # deviation exactly 50.0 is not above 50
        "Price update request",
        f"Please change the price of {pid('1')} to $150.00.",
        ("pricing", "verified", "apply_price_update", "normal"),
        PRICING,
        id="pricing-deviation-boundary",
    ),
    pytest.param(  # deviation 51.0 -> escalate, and escalations are high priority
        "Price update request",
        f"Please change the price of {pid('1')} to $151.00.",
        ("pricing", "verified", "escalate_to_specialist", "high"),
        PRICING,
        id="pricing-escalate",
    ),
    pytest.param(
        "Price update request",
        f"Please lower the price of {pid('1')}, competitors are cheaper.",
        ("pricing", "verified", "request_information", "normal"),
        LISTING,
        id="pricing-no-amount",
    ),
    pytest.param(  # D: title 2 + typo 1 = 3; Beauty is brand-gated
        "Hello",
        f"The title of {pid('5')} has a typo.",
        ("description_change", "verified", "escalate_to_specialist", "high"),
        LISTING,
        id="description-gated",
    ),
    pytest.param(  # D: description 2 + wording 1 = 3; "cures" is a prohibited claim
        "Hello",
        f"Please update the description and the wording for {pid('1')}: it cures headaches.",
        ("description_change", "verified", "reject_request", "normal"),
        LISTING,
        id="description-prohibited-claim",
    ),
    pytest.param(
        "Hello",
        f"Please update the description and the wording for {pid('1')}: now 20% lighter.",
        ("description_change", "verified", "apply_description_update", "normal"),
        LISTING,
        id="description-apply",
    ),
    pytest.param(  # L: inactive 2 + not visible 1 = 3, but the listing is active
        "Hello",
        f"My listing for {pid('1')} is inactive and not visible.",
        ("listing_status", "verified", "send_status_update", "normal"),
        LISTING,
        id="listing-active",
    ),
    pytest.param(
        "Hello",
        f"My listing for {pid('3')} is inactive and not visible.",
        ("listing_status", "verified", "escalate_to_specialist", "high"),
        LISTING,
        id="listing-policy-violation",
    ),
    pytest.param(
        "Hello",
        f"My listing for {pid('2')} is inactive and not visible.",
        ("listing_status", "verified", "reactivate_listing", "normal"),
        STOCK,
        id="listing-out-of-stock-restocked",
    ),
    pytest.param(  # urgent 1 + asap 1 = 2 -> high
        "Hello",
        f"My listing for {pid('6')} is inactive and not visible. Urgent, please fix ASAP.",
        ("listing_status", "verified", "request_restock", "high"),
        STOCK,
        id="listing-out-of-stock-empty-urgent",
    ),
    pytest.param(
        "Account question",
        "Where can I see my payout schedule?",
        ("general", "not_required", "forward_to_seller_support", "normal"),
        FEATURES,
        id="general",
    ),
    pytest.param(  # P: price 2 < 3 -> general even with a product id
        "Account question",
        f"Is the referral fee of {pid('1')} based on the price?",
        ("general", "not_required", "forward_to_seller_support", "normal"),
        FEATURES,
        id="general-below-threshold",
    ),
    pytest.param(  # D 3 = L 3 -> listing_status wins the tie
        "Help",
        f"The title of {pid('2')} has a typo and the listing is now inactive. Is it stranded?",
        ("listing_status", "verified", "reactivate_listing", "normal"),
        STOCK,
        id="tie-listing-over-description",
    ),
    pytest.param(  # P 3 = D 3 -> pricing wins the tie
        "Help",
        f"Please update the price and the description of {pid('1')}. A competitor sells it "
        "for less and our wording is off. Please set it to $90.00.",
        ("pricing", "verified", "apply_price_update", "normal"),
        PRICING,
        id="tie-pricing-over-description",
    ),
    pytest.param(
        "Price update request",
        "Please change the price of our best-selling item to $90.00.",
        ("pricing", "missing_reference", "request_information", "normal"),
        FEATURES,
        id="missing-reference",
    ),
    pytest.param(
        "Price update request",
        f"Please change the price of {pid('1')} and {pid('5')} to $90.00.",
        ("pricing", "multiple_references", "request_information", "normal"),
        FEATURES,
        id="multiple-references",
    ),
    pytest.param(
        "Price update request",
        "Please change the price of B0ZZZZZZZ9 to $90.00.",
        ("pricing", "not_found", "request_information", "normal"),
        LISTING,
        id="unknown-product",
    ),
    pytest.param(
        "Price update request",
        f"Please change the price of {pid('4')} to $90.00.",
        ("pricing", "seller_mismatch", "reject_request", "normal"),
        LISTING,
        id="other-sellers-product",
    ),
]


@pytest.mark.parametrize(("subject", "body", "expected", "calls"), CASES)
def test_policy_branches(
    ctx: ToolContext, subject: str, body: str, expected: tuple, calls: list[str]
) -> None:
    outputs, made = _solve(ctx, subject, body)
    assert outputs == expected
    assert made == calls


def _features(ctx: ToolContext, subject: str, body: str) -> dict[str, Any]:
    args = {"email_id": "EM-400002", "seller_id": SELLER, "subject": subject, "body": body}
    return DOMAIN.tool_map()["extract_email_features"](args, ctx)


def test_feature_extraction_details(ctx: ToolContext) -> None:
    result = _features(
        ctx,
        "PRICING question",  # the subject counts, case-insensitively
        f"Prices of {pid('1')} and {pid('1')} were $1,299.00 and $ 5; it was reactivated.",
    )
    assert result["pricing_score"] == 4  # pricing 2 + prices 2
    assert result["listing_status_score"] == 0  # "reactivated" is not "reactivate"
    assert result["product_ids"] == [pid("1")]
    assert result["price_amounts"] == [1299.0, 5.0]
    assert result["prohibited_claims"] == []
    claims = _features(ctx, "Hi", "A miracle cream, FDA approved, cures all.")
    assert claims["prohibited_claims"] == ["cures", "fda approved", "miracle"]


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "field"),
    [
        pytest.param(
            "extract_email_features",
            {"email_id": "EM-400003", "seller_id": "S999999", "subject": "a", "body": "b"},
            "not_found",
            "seller_id",
            id="features-unknown-seller",
        ),
        pytest.param(
            "get_product_listing",
            {"seller_id": "S999999", "product_id": pid("1")},
            "not_found",
            "seller_id",
            id="listing-unknown-seller",
        ),
        pytest.param(
            "get_inventory_status",
            {"seller_id": SELLER, "product_id": "B0ZZZZZZZ9"},
            "not_found",
            "product_id",
            id="inventory-unknown-product",
        ),
        pytest.param(
            "check_pricing_rules",
            {"seller_id": SELLER, "product_id": "B0ZZZZZZZ9", "requested_price": 9.5},
            "not_found",
            "product_id",
            id="pricing-unknown-product",
        ),
        pytest.param(
            "check_pricing_rules",
            {"seller_id": SELLER, "product_id": pid("4"), "requested_price": 9.5},
            "forbidden",
            "product_id",
            id="pricing-other-sellers-product",
        ),
        pytest.param(
            "get_inventory_status",
            {"seller_id": SELLER, "product_id": pid("4")},
            "forbidden",
            "product_id",
            id="inventory-other-sellers-product",
        ),
        pytest.param(
            "check_pricing_rules",
            {"seller_id": SELLER, "product_id": pid("1"), "requested_price": 0},
            "invalid_value",
            "requested_price",
            id="non-positive-price",
        ),
    ],
)
def test_refusals(ctx: ToolContext, tool: str, arguments: dict, code: str, field: str) -> None:
    assert_refused(DOMAIN, ctx, tool, arguments, code, field)


def test_unknown_product_listing_is_a_fact_not_an_error(ctx: ToolContext) -> None:
    result = DOMAIN.tool_map()["get_product_listing"](
        {"seller_id": SELLER, "product_id": "B0ZZZZZZZ9"}, ctx
    )
    assert result["listing_found"] is False and result["owner_seller_id"] is None

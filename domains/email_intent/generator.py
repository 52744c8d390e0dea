"""Seeded generator for the seller e-mail dataset: sellers, catalogue, prices, stock, e-mails.

E-mails are composed from sentence banks whose wording naturally carries the keywords of one
topic (and, in the tie scenarios, of two topics equally). Scenarios rotate so that every
branch of the SOP occurs several times. The generator never decides a label: the reference
policy derives intent and action from what the tools extract and look up.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

TASK_COUNT = 122
SELLER_COUNT = 36
EXTRA_LISTINGS = 40
TODAY = date(2026, 4, 14)

# (topic the e-mail is written about, what the data behind it looks like)
SCENARIOS = [
    ("pricing", "apply"),
    ("description", "apply"),
    ("listing", "out_of_stock_with_units"),
    ("general", "plain"),
    ("pricing", "below_floor"),
    ("description", "brand_gated"),
    ("listing", "active"),
    ("pricing", "far_above_reference"),
    ("description", "prohibited_claim"),
    ("listing", "policy_violation"),
    ("pricing", "no_amount"),
    ("listing", "out_of_stock_no_units"),
    ("general", "weak_pricing_signal"),
    ("rotate", "missing_reference"),
    ("rotate", "multiple_references"),
    ("rotate", "unknown_product"),
    ("rotate", "other_sellers_product"),
    ("tie_listing_pricing", "out_of_stock_with_units"),
    ("pricing", "apply"),
    ("description", "apply"),
    ("tie_pricing_description", "apply"),
    ("listing", "out_of_stock_with_units"),
    ("tie_listing_description", "active"),
    ("general", "plain"),
]
ROTATING_TOPICS = ["pricing", "description", "listing"]

SUBJECTS = {
    "pricing": ["Price update request", "Pricing change for one of our items"],
    "description": ["Please correct a product title", "Description change request"],
    "listing": ["Listing deactivated", "Why is my listing inactive?"],
    "general": ["Account question", "Question for seller support"],
    "tie": ["Help needed with {pid}", "Problem with {pid}"],
}
# Every sentence of a topic bank carries at least 3 points of that topic's keywords.
BODIES = {
    "pricing": [
        "I would like to update the price of {pid}. Our competitors are selling it cheaper.",
        "Please adjust the pricing on {pid}; we are planning a markdown for the season.",
        "The cost of {pid} went up and I need to change its price.",
        "We want to reprice {pid} to stay ahead of competitors.",
        "Our supplier raised the cost of {pid}, so the current price no longer works.",
    ],
    "description": [
        "The title of {pid} has a typo. Please correct it.",
        "Please update the description of {pid} to mention the new dimensions.",
        "The bullet points of {pid} list the wrong ingredients.",
        "Some of the product details for {pid} are misspelled.",
        "The images and the title of {pid} show the old model.",
    ],
    "listing": [
        "My listing for {pid} is inactive and not showing in search results.",
        "The listing for {pid} was deactivated yesterday. Can you reactivate it?",
        "The listing status page for {pid} says suppressed.",
        "The page for {pid} shows it as out of stock and inactive, although we restocked.",
        "When will {pid} be live again? It has been suppressed for days.",
    ],
    "general": [
        "I have a question about the payout schedule for my account.",
        "How do I add a second user to our seller account?",
        "Where can I download last month's tax invoice?",
        "Could you confirm that our VAT registration was received?",
        "How do I change the bank account used for disbursements?",
    ],
}
WEAK_PRICING = "Does the referral fee depend on the price of the item?"
TIES = {
    "tie_listing_pricing": (
        "My listing for {pid} was deactivated and is not visible to buyers. It happened right "
        "after I added a discount to the price."
    ),
    "tie_pricing_description": (
        "Please update the price and the description of {pid}. A competitor sells it for "
        "less and our wording is off."
    ),
    "tie_listing_description": (
        "The title of {pid} has a typo and the listing is now inactive. Is it stranded?"
    ),
}
NEW_TEXT = [
    "Made from recycled stainless steel and dishwasher safe.",
    "Now includes a second charging cable and a travel pouch.",
    "Suitable for children aged 3 and up.",
]
CLAIMS = [
    "This balm cures eczema in a week.",
    "Our serum is clinically proven to reverse wrinkles.",
    "A miracle formula with guaranteed results.",
]
URGENCY = [
    "This is urgent, we are losing sales every day.",
    "Please fix this immediately, it is urgent.",
]
MILD_URGENCY = "Please reply as soon as possible."
CONTEXT = [  # neutral sentences: no topic, urgency or claim keywords
    "We have been selling on the marketplace since 2019.",
    "Our order volume doubled this quarter.",
    "Thank you for your help.",
    "",
    "",
]
CATEGORIES = ["Kitchen", "Toys", "Beauty", "Electronics", "Garden", "Sports", "Pet Supplies"]
GATED = {"Beauty", "Electronics"}
NOUNS = ["Water Bottle", "Puzzle Set", "Face Serum", "USB Charger", "Garden Hose", "Yoga Mat"]
BRANDS = ["Aurora", "Kestrel", "Lumio", "Northwind", "Pinecrest", "Tidal"]
SELLER_NAMES = ["Blue Heron Supply", "Copperleaf Goods", "Harbor & Vine", "Maple Street Co"]
SIGNERS = ["Alex", "Sam", "Priya", "Jonas", "Mei", "Tomás", "Ada", "Kofi"]


@dataclass
class _Catalog:
    """Rows of the four catalogue tables, filled as e-mails are generated."""

    listings: list[dict]
    pricing: list[dict]
    inventory: list[dict]
    used_ids: set[str]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    sellers = [
        {
            "seller_id": f"S{100000 + s}",
            "business_name": f"{SELLER_NAMES[s % len(SELLER_NAMES)]} {s + 1}",
            "account_health": rng.choice(["good", "good", "fair"]),
        }
        for s in range(SELLER_COUNT)
    ]
    catalog = _Catalog([], [], [], set())
    tasks = []
    for i in range(TASK_COUNT):
        topic, data = SCENARIOS[i % len(SCENARIOS)]
        if topic == "rotate":
            topic = ROTATING_TOPICS[(i // len(SCENARIOS)) % len(ROTATING_TOPICS)]
        seller = sellers[rng.randrange(SELLER_COUNT)]
        inputs = {
            "email_id": f"EM-{400000 + i}",
            "seller_id": seller["seller_id"],
            "received_at": (TODAY - timedelta(days=rng.randrange(60))).isoformat(),
            **_email(rng, topic, data, seller, sellers, catalog),
        }
        tasks.append(Task(id=f"email_intent-{i:03d}", domain="email_intent", inputs=inputs))
    for _ in range(EXTRA_LISTINGS):  # catalogue entries no e-mail is about
        _listing(rng, catalog, rng.choice(sellers)["seller_id"], "active")
    return GeneratedData(
        tables={
            "sellers": pd.DataFrame(sellers),
            "listings": pd.DataFrame(catalog.listings),
            "pricing": pd.DataFrame(catalog.pricing),
            "inventory": pd.DataFrame(catalog.inventory),
        },
        tasks=tasks,
    )


def _product_id(rng: random.Random, catalog: _Catalog) -> str:
    alphabet = string.digits + string.ascii_uppercase
    while True:
        pid = "B0" + "".join(rng.choice(alphabet) for _ in range(8))
        if pid not in catalog.used_ids:
            catalog.used_ids.add(pid)
            return pid


def _listing(rng: random.Random, catalog: _Catalog, seller_id: str, data: str) -> dict:
    """Add one product (listing, prices, stock) shaped by the scenario ``data``."""
    pid = _product_id(rng, catalog)
    category = rng.choice(sorted(GATED) if data == "brand_gated" else CATEGORIES)
    if data in ("apply", "prohibited_claim"):
        category = rng.choice([c for c in CATEGORIES if c not in GATED])
    status, reason = "active", None
    if data.startswith("out_of_stock"):
        status, reason = "inactive", "out_of_stock"
    elif data == "policy_violation":
        status, reason = "inactive", "policy_violation"
    catalog.listings.append(
        {
            "product_id": pid,
            "seller_id": seller_id,
            "title": f"{rng.choice(BRANDS)} {rng.choice(NOUNS)}",
            "category": category,
            "listing_status": status,
            "status_reason": reason,
            "brand_gated": category in GATED,
        }
    )
    reference = round(rng.uniform(12, 240), 2)
    catalog.pricing.append(
        {
            "product_id": pid,
            "current_price": round(reference * rng.uniform(0.9, 1.2), 2),
            "minimum_allowed_price": round(reference * 0.7, 2),
            "reference_price": reference,
        }
    )
    units = 0 if data == "out_of_stock_no_units" else rng.randrange(1, 400)
    if data == "out_of_stock_with_units":
        units = rng.randrange(5, 120)  # a shipment was received since the listing went down
    catalog.inventory.append(
        {
            "product_id": pid,
            "fulfillable_units": units,
            "inbound_units": rng.randrange(0, 200),
            "reserved_units": rng.randrange(0, 10),
            "last_restock_date": (TODAY - timedelta(days=rng.randrange(1, 120))).isoformat(),
        }
    )
    return catalog.pricing[-1]


def _email(
    rng: random.Random,
    topic: str,
    data: str,
    seller: dict,
    sellers: list[dict],
    catalog: _Catalog,
) -> dict:
    """Subject and body of one e-mail, adding the products it refers to to the catalogue."""
    owner = seller["seller_id"]
    if data == "other_sellers_product":
        owner = rng.choice([s for s in sellers if s is not seller])["seller_id"]
    prices = _listing(rng, catalog, owner, data)
    pid = catalog.listings[-1]["product_id"]
    if data == "unknown_product":
        catalog.listings.pop()  # the seller quotes an id the catalogue does not hold
        catalog.pricing.pop()
        catalog.inventory.pop()
    reference = pid
    if data == "missing_reference":
        reference = "our best-selling item"

    if topic.startswith("tie_"):
        subject = rng.choice(SUBJECTS["tie"])
        body = [TIES[topic]]
        topic = "pricing" if topic == "tie_pricing_description" else "listing"
    elif topic == "general":
        subject = rng.choice(SUBJECTS["general"])
        body = [rng.choice(BODIES["general"])]
        if data == "weak_pricing_signal":
            body.append(WEAK_PRICING)
    else:
        subject = rng.choice(SUBJECTS[topic])
        body = [rng.choice(BODIES[topic])]

    if data == "multiple_references":
        _listing(rng, catalog, owner, "apply")
        body.append(f"The same goes for {catalog.listings[-1]['product_id']}.")
    if topic == "pricing" and data != "no_amount":
        body.append(_amount_sentence(rng, prices, data))
    if topic == "description":
        text = rng.choice(CLAIMS if data == "prohibited_claim" else NEW_TEXT)
        body.append(f'The new text should read: "{text}"')

    roll = rng.random()
    if roll < 0.3:
        body.append(rng.choice(URGENCY))
    elif roll < 0.5:
        body.append(MILD_URGENCY)
    body.insert(0, rng.choice(CONTEXT))
    signer = rng.choice(SIGNERS)
    text = " ".join(b for b in body if b).replace("{pid}", reference)
    return {
        "subject": subject.replace("{pid}", reference),
        "body": f"Hello Seller Support,\n\n{text}\n\nBest regards,\n{signer}\n"
        f"{seller['business_name']}",
    }


def _amount_sentence(rng: random.Random, prices: dict, data: str) -> str:
    factor = {
        "below_floor": (0.4, 0.62),
        "far_above_reference": (1.6, 2.4),
    }.get(data, (0.78, 1.3))
    requested = round(prices["reference_price"] * rng.uniform(*factor), 2)
    if rng.random() < 0.5:
        return f"Please set it to ${requested:.2f}."
    current = prices["current_price"]
    return f"It is listed at ${current:.2f} right now; please make it ${requested:.2f}."

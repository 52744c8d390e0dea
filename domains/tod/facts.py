"""The facts a procedure's conditions and action arguments read.

A customer fact is known only once the customer said it (they answer when asked); a system
fact is known only once an action revealed it (its result carries it). ``values`` is the
finite domain the equivalence test enumerates; integer facts are enumerated around the
thresholds the conditions name instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

CUSTOMER: Final = "customer"
SYSTEM: Final = "system"


@dataclass(frozen=True)
class Fact:
    name: str
    label: str  # how the formats name it ("the membership level")
    source: str  # CUSTOMER or SYSTEM
    kind: str  # "enum", "bool", "int", "text"
    values: tuple[str, ...] = ()


FACTS: Final = {
    f.name: f
    for f in (
        Fact("account_id", "the account id", CUSTOMER, "text"),
        Fact("order_id", "the order id", CUSTOMER, "text"),
        Fact("zip_code", "the zip code", CUSTOMER, "text"),
        Fact("email", "the email address", CUSTOMER, "text"),
        Fact("new_address", "the new address", CUSTOMER, "text"),
        Fact("has_receipt", "receipt in hand", CUSTOMER, "bool"),
        Fact("item_damaged", "item damaged", CUSTOMER, "bool"),
        Fact("membership", "the membership level", SYSTEM, "enum",
             ("guest", "bronze", "silver", "gold")),
        Fact("account_status", "the account status", SYSTEM, "enum", ("active", "locked")),
        Fact("identity_verified", "identity verified", SYSTEM, "bool"),
        Fact("order_status", "the order status", SYSTEM, "enum",
             ("ordered", "shipped", "delivered")),
        Fact("days_since_purchase", "the days since purchase", SYSTEM, "int"),
        Fact("payment_method", "the payment method", SYSTEM, "enum", ("card", "gift_card")),
        Fact("subscription", "the subscription status", SYSTEM, "enum", ("active", "expired")),
        Fact("in_stock", "item in stock", SYSTEM, "bool"),
    )
}
BOOL_WORDS: Final = {True: "yes", False: "no"}

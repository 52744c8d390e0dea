"""Field types by naming convention, so a scenario lists field names and nothing else.

A field's suffix says what it holds (``*_id``: a reference, ``*_verified``: a flag,
``*_score``: a score...). The same rule gives its JSON Schema (tool contracts), its SQLite
column type and how the generator draws a value for it.
"""

from __future__ import annotations

import random
from typing import Any

from sopgym.types import JSON

_FLAG = ("_verified", "_hit", "_flag", "_match", "_active", "_default", "_consent", "_pep")
_MONEY = ("_amount", "_income", "_balance", "_limit", "_value", "_debt", "_deposit", "_assets")
_RATIO = ("_rate", "_ratio", "_pct", "_yield", "_volatility")
_COUNT = ("_months", "_days", "_count", "_years", "_age", "_inquiries")
_WORDS = {
    "full_name": ["Amara Obi", "Bruno Keller", "Chen Wei", "Dana Ruiz", "Emil Sorensen",
                  "Fatima Zaidi", "Goran Petrov", "Hana Sato", "Ines Duarte", "Jonas Berg"],
    "employer_name": ["Northwind Ltd", "Blue Harbor Co", "Kestrel Systems", "Oakfield Farms",
                      "Vireo Health", "Quarry Lane Works"],
    "city": ["Leeds", "Porto", "Lyon", "Gdansk", "Aarhus", "Ghent", "Turin"],
    "loan_purpose": ["home improvement", "car purchase", "debt consolidation", "education",
                     "medical costs", "small business"],
    "card_product": ["Classic", "Gold", "Platinum", "Cashback", "Travel"],
    "fund_code": ["GLB-EQ-01", "EUR-BD-02", "EM-EQ-03", "MULTI-04", "TECH-05", "INFRA-06"],
    "residency_code": ["GB", "FR", "DE", "PT", "ES", "NL", "IE"],
    "fund_currency_code": ["GBP", "EUR", "USD"],
}
_REFERENCE_PREFIX_LENGTH = 3


def kind(name: str) -> str:
    """``flag``, ``money``, ``ratio``, ``count``, ``score``, ``band``, ``date``, ``ref`` or
    ``text``."""
    if name.endswith(_FLAG):
        return "flag"
    if name.endswith(_MONEY):
        return "money"
    if name.endswith(_RATIO):
        return "ratio"
    if name.endswith(_COUNT):
        return "count"
    if name.endswith("_score"):
        return "score"
    if name.endswith("_band"):
        return "band"
    if name.endswith("_date") or name == "date_of_birth":
        return "date"
    if name.endswith(("_id", "_ref", "_number")):
        return "ref"
    return "text"


BANDS = ("A", "B", "C")
_SCHEMAS: dict[str, JSON] = {
    "flag": {"type": "boolean"},
    "money": {"type": "integer", "minimum": 0},
    "ratio": {"type": "number", "minimum": 0},
    "count": {"type": "integer", "minimum": 0},
    "score": {"type": "integer", "minimum": 0, "maximum": 1000},
    "band": {"type": "string", "enum": list(BANDS)},
    "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
    "ref": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{6}$"},
    "text": {"type": "string", "minLength": 1},
}
SQL_TYPES = {"flag": "INTEGER", "money": "INTEGER", "ratio": "REAL", "count": "INTEGER",
             "score": "INTEGER"}  # fmt: skip


def schema(name: str) -> JSON:
    return dict(_SCHEMAS[kind(name)])


def sql_type(name: str) -> str:
    return SQL_TYPES.get(kind(name), "TEXT")


def from_sql(name: str, value: Any) -> Any:
    """SQLite keeps flags as 0/1: give them back as JSON booleans."""
    if value is not None and kind(name) == "flag":
        return bool(value)
    return value


def prefix(name: str) -> str:
    letters = "".join(part[0] for part in name.split("_")).upper()
    return (letters + "XXX")[:_REFERENCE_PREFIX_LENGTH]


def draw(name: str, rng: random.Random, serial: int) -> Any:
    """A plausible value; references embed ``serial`` so each application's are unique."""
    match kind(name):
        case "flag":
            return rng.random() < 0.5
        case "money":
            return rng.randrange(1_000, 250_000)
        case "ratio":
            return round(rng.uniform(0.01, 0.09 if name.endswith("_rate") else 0.6), 4)
        case "count":
            return rng.randrange(1, 120)  # terms and tenures: never zero
        case "score":
            return rng.randrange(300, 900)
        case "band":
            return rng.choice(BANDS)
        case "date":
            year, month, day = rng.randrange(1950, 2025), rng.randrange(1, 13), rng.randrange(1, 29)
            return f"{year}-{month:02d}-{day:02d}"
        case "ref":
            return f"{prefix(name)}-{serial * 10 + rng.randrange(10):06d}"
    return rng.choice(_WORDS.get(name, [f"{name.split('_')[0]}-{c}" for c in "pqrstuvw"]))

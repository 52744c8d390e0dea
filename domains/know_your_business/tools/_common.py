"""Schema fragments and helpers shared by the know-your-business tools.

Name comparison lives here so the registry, the tax authority and the sanctions screen all
score names the same way: case, punctuation and spacing never matter, spelling does.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

APPLICATION_ID = {"type": "string", "pattern": "^KYB-[0-9]{6}$"}
REGISTRATION_NUMBER = {"type": "string", "pattern": "^C[0-9]{8}$"}
COUNTRY_CODE = {"type": "string", "pattern": "^X[A-Z]$"}
TAX_ID = {"type": "string", "pattern": "^T[0-9]{9}$"}
NAME = {"type": "string", "minLength": 2, "maxLength": 120}
NULLABLE_TEXT = {"type": ["string", "null"]}
SIMILARITY = {"type": ["integer", "null"], "minimum": 0, "maximum": 100}
# business type -> the licence it needs (SOP section 6); unlisted types need none
LICENSE_TYPES = [
    "money_transmission",
    "wholesale_drug_distribution",
    "alcohol_wholesale",
    "investment_advice",
]
OUTCOMES = ["approve", "escalate", "awaiting_information"]

_PUNCTUATION = re.compile(r"[^\w\s]")


def normalized(name: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", name.casefold()).split())


def name_similarity(a: str, b: str) -> int:
    """0-100: how alike two names are once case, punctuation and spacing are ignored."""
    return round(100 * SequenceMatcher(None, normalized(a), normalized(b)).ratio())

"""Schema fragments and small helpers shared by the dangerous goods tools.

The severity tables store a missing score as an empty cell, which pandas reads back as NaN in
a float column; :func:`severity` turns that into ``None`` or a plain ``int`` so every tool
reports scores the same way.
"""

from __future__ import annotations

import math
from typing import Any

PRODUCT_ID = {"type": "string", "pattern": "^PRD-[0-9]{6}$"}
SDS_ID = {"type": "string", "pattern": "^SDS-[0-9]{6}$"}
UN_NUMBER = {"type": "string", "pattern": "^UN[0-9]{4}$"}
WASTE_STREAM = {"type": "string", "pattern": "^WS-[0-9]{3}$"}
TRANSPORT_MODES = ["road", "sea", "air"]
TRANSPORT_MODE = {"type": "string", "enum": TRANSPORT_MODES}

NULLABLE_TEXT = {"type": ["string", "null"]}
SEVERITY = {"type": ["integer", "null"], "minimum": 1, "maximum": 5}


def severity(value: Any) -> int | None:
    """A stored severity cell as ``int``, or ``None`` when it was never assessed."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return int(value)

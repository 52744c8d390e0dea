"""Schema fragments and small helpers shared by the content-flagging tools.

Every tool takes the same kinds of ids and scores; defining them once keeps the contracts of
the four SOP tools (and the distractors) consistent, so an argument that one tool returns is
always accepted by the next one in the chain.
"""

from __future__ import annotations

from collections.abc import Sequence

USER_ID = {"type": "string", "pattern": "^U[0-9]{7}$", "description": "Account id, e.g. U1000042"}
CONTENT_ID = {"type": "string", "pattern": "^C[0-9]{8}$", "description": "Content id"}
FLAG_ID = {"type": "string", "pattern": "^FLG-[0-9]{6}$", "description": "Moderation flag id"}
DEVICE_FINGERPRINT = {"type": "string", "pattern": "^[0-9a-f]{16}$"}
IP_ADDRESS = {
    "type": "string",
    "pattern": r"^([0-9]{1,3}\.){3}[0-9]{1,3}$",
    "description": "IPv4 address the content was posted from",
}
BOT_PROBABILITY_INDEX = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "description": "Bot Probability Index as returned by compute_bot_probability",
}
USER_TRUST_SCORE = {
    "type": "integer",
    "minimum": 0,
    "maximum": 100,
    "description": "User Trust Score as returned by compute_user_trust_score",
}
CONTENT_SEVERITY_INDEX = {
    "type": "number",
    "minimum": 0,
    "maximum": 10,
    "description": "Content Severity Index as returned by compute_content_severity",
}
COUNT = {"type": "integer", "minimum": 0}


def points_for(value: float, bands: Sequence[tuple[float, int]], above: int) -> int:
    """Points of the first band whose upper limit (exclusive) exceeds ``value``.

    Scoring tables in this domain are all "below X → p points" ladders; one helper keeps
    the boundaries unambiguous (a value equal to a limit falls in the next band).
    """
    for limit, points in bands:
        if value < limit:
            return points
    return above

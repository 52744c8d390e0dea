"""The content-flagging SOP's four tools, in the order the SOP calls them, and distractors."""

from sopgym.domains.content_flagging.tools import (
    compute_bot_probability,
    compute_content_severity,
    compute_user_trust_score,
    record_moderation_action,
)
from sopgym.domains.content_flagging.tools.distractors import DISTRACTORS

TOOLS = [
    compute_bot_probability.run,
    compute_user_trust_score.run,
    compute_content_severity.run,
    record_moderation_action.run,
]

__all__ = ["DISTRACTORS", "TOOLS"]

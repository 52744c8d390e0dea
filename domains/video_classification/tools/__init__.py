"""Video moderation tools, one module each, in SOP order; distractors in two shared modules."""

from sopgym.domains.video_classification.tools import (
    apply_moderation_tags,
    escalate_to_moderator,
    get_moderator_feedback,
    get_review_metadata,
    get_uploader_history,
    match_known_content,
    record_moderation_decision,
    set_content_warning,
)
from sopgym.domains.video_classification.tools.distractors_actions import ACTION_DISTRACTORS
from sopgym.domains.video_classification.tools.distractors_lookup import LOOKUP_DISTRACTORS

TOOLS = [
    get_review_metadata.run,
    match_known_content.run,
    escalate_to_moderator.run,
    get_moderator_feedback.run,
    get_uploader_history.run,
    apply_moderation_tags.run,
    set_content_warning.run,
    record_moderation_decision.run,
]
DISTRACTORS = [*LOOKUP_DISTRACTORS, *ACTION_DISTRACTORS]

__all__ = ["DISTRACTORS", "TOOLS"]

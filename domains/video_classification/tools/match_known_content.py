"""Hash-list lookup: is this fingerprint already confirmed violating content?"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.video_classification.tools._common import BOOLEAN, FINGERPRINT, STRING, nullable


@tool(
    name="match_known_content",
    description=(
        "Look a content fingerprint up in the shared hash lists of content already confirmed "
        "as violating. Returns whether it matched and, if so, the category and the list."
    ),
    input_schema=arguments_schema({"content_fingerprint": FINGERPRINT}),
    output_schema=result_schema(
        {
            "match_found": BOOLEAN,
            "matched_category": nullable(STRING),
            "hash_list": nullable(STRING),
            "listed_on": nullable(STRING),
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    entry = ctx.tables.row("known_content", "fingerprint", args["content_fingerprint"])
    if entry is None:
        return {
            "match_found": False,
            "matched_category": None,
            "hash_list": None,
            "listed_on": None,
        }
    return {
        "match_found": True,
        "matched_category": entry["category"],
        "hash_list": entry["hash_list"],
        "listed_on": entry["listed_on"],
    }

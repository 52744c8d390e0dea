"""Step 6 of the SOP: screen one name against the consolidated sanctions list.

The screen reports the closest listed entry of the same party type and a 0-100 similarity;
what counts as a hit is the SOP's decision, not the screen's.
"""

from sopgym.core.tools import JSON, ToolContext, arguments_schema, result_schema, tool
from sopgym.domains.know_your_business.tools._common import NAME, NULLABLE_TEXT, name_similarity


@tool(
    name="screen_sanctions",
    description=(
        "Screen a person or organisation name against the consolidated sanctions list. Returns "
        "the closest listed entry of the same party type and its similarity score (0-100)."
    ),
    input_schema=arguments_schema(
        {
            "party_name": NAME,
            "party_type": {"type": "string", "enum": ["individual", "organization"]},
        }
    ),
    output_schema=result_schema(
        {
            "party_name": {"type": "string"},
            "party_type": {"type": "string"},
            "best_match_score": {"type": "integer", "minimum": 0, "maximum": 100},
            "matched_entry_id": NULLABLE_TEXT,
            "matched_name": NULLABLE_TEXT,
            "list_name": NULLABLE_TEXT,
            "entries_screened": {"type": "integer"},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    entries = ctx.tables.rows("sanctions_list", "party_type", args["party_type"])
    scored = sorted(
        ((name_similarity(args["party_name"], e["name"]), e["entry_id"], e) for e in entries),
        key=lambda item: (-item[0], item[1]),
    )
    base = {"party_name": args["party_name"], "party_type": args["party_type"]}
    if not scored:
        return {
            **base,
            "best_match_score": 0,
            "matched_entry_id": None,
            "matched_name": None,
            "list_name": None,
            "entries_screened": 0,
        }
    score, _, entry = scored[0]
    return {
        **base,
        "best_match_score": score,
        "matched_entry_id": entry["entry_id"],
        "matched_name": entry["name"],
        "list_name": entry["list_name"],
        "entries_screened": len(entries),
    }

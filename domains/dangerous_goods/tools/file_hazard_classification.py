"""Step 7 of the SOP: file the outcome in the hazardous-materials register.

The register only checks that the filing is well formed (a known product, and a zero score
exactly when the class is undetermined); deciding the class is the SOP's job, not the tool's.
"""

import hashlib

from sopgym.core.errors import ToolError
from sopgym.core.tools import JSON, ToolContext, arguments_schema, require_row, result_schema, tool
from sopgym.domains.dangerous_goods.tools._common import PRODUCT_ID

CLASS_CODES = ["A", "B", "C", "D", "UNDETERMINED"]


@tool(
    name="file_hazard_classification",
    description=(
        "File a product's hazard classification in the hazardous-materials register. Pass the "
        "class code (A-D, or UNDETERMINED when no class can be decided) and the cumulative "
        "score (0 when undetermined). Returns the filing id and the register status."
    ),
    input_schema=arguments_schema(
        {
            "product_id": PRODUCT_ID,
            "class_code": {"type": "string", "enum": CLASS_CODES},
            "cumulative_score": {"type": "integer", "minimum": 0, "maximum": 20},
        }
    ),
    output_schema=result_schema(
        {
            "filing_id": {"type": "string", "pattern": "^DGF-[0-9A-F]{10}$"},
            "product_id": {"type": "string"},
            "register_status": {"type": "string", "enum": ["classified", "on_hold"]},
        }
    ),
)
def run(args: JSON, ctx: ToolContext) -> JSON:
    product_id, code, score = args["product_id"], args["class_code"], args["cumulative_score"]
    require_row(ctx, "products", "product_id", product_id)
    undetermined = code == "UNDETERMINED"
    if undetermined != (score == 0):
        raise ToolError(
            "invalid_value",
            "cumulative_score must be 0 exactly when class_code is UNDETERMINED",
            "cumulative_score",
        )
    digest = hashlib.sha256(f"{product_id}|{code}|{score}".encode()).hexdigest()
    return {
        "filing_id": f"DGF-{digest[:10].upper()}",
        "product_id": product_id,
        "register_status": "on_hold" if undetermined else "classified",
    }

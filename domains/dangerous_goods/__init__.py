"""Dangerous goods: classify a product's hazard (A-D) from four severity scores."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.dangerous_goods.generator import generate
from sopgym.domains.dangerous_goods.policy import solve
from sopgym.domains.dangerous_goods.tools import DISTRACTORS, TOOLS
from sopgym.domains.dangerous_goods.tools._common import (
    PRODUCT_ID,
    TRANSPORT_MODE,
    UN_NUMBER,
)

_TEXT = {"type": "string", "minLength": 1}
_DATE = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
_SECONDARY = [
    "get_handling_guidelines",
    "get_transport_requirements",
    "get_disposal_guidelines",
]

DOMAIN = DomainPack(
    name="dangerous_goods",
    title="Dangerous goods hazard classification (supply chain)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "products": "product_id",
        "safety_data_sheets": "product_id",
        "handling_guidelines": "sds_id",
        "transport_requirements": "un_number",
        "disposal_guidelines": "waste_stream_code",
    },
    input_schema={
        "type": "object",
        "properties": {
            "product_id": PRODUCT_ID,
            "product_name": _TEXT,
            "supplier": _TEXT,
            "declared_un_number": UN_NUMBER,
            "transport_mode": TRANSPORT_MODE,
            "assessment_date": _DATE,
        },
        "required": [
            "product_id",
            "product_name",
            "supplier",
            "declared_un_number",
            "transport_mode",
            "assessment_date",
        ],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "hazard_class": {"enum": ["A", "B", "C", "D", "unable_to_decide"]},
            "total_hazard_score": {
                "type": "integer",
                "minimum": 0,
                "maximum": 20,
                "x-tolerance": 0,
            },
            "data_completeness": {"enum": ["complete", "imputed", "insufficient"]},
            "imputed_component": {"enum": ["none", "handling", "transport", "disposal"]},
            "declaration_check": {"enum": ["consistent", "un_number_mismatch", "not_checked"]},
            "filing_reference": {"type": "string", "pattern": "^DGF-[0-9A-F]{10}$"},
        },
        "required": [
            "hazard_class",
            "total_hazard_score",
            "data_completeness",
            "imputed_component",
            "declaration_check",
            "filing_reference",
        ],
        "additionalProperties": False,
    },
    dependencies={
        **{name: ["get_safety_data_sheet"] for name in _SECONDARY},
        "file_hazard_classification": ["get_safety_data_sheet", *_SECONDARY],
    },
)

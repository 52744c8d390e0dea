"""Warehouse package inspection: barcode, quantity, location and damage checks on a received
package, the vendor chargeback they raise and the package's resolution."""

from pathlib import Path

from sopgym.core.domain import DomainPack
from sopgym.domains.warehouse_package_inspection.generator import generate
from sopgym.domains.warehouse_package_inspection.policy import solve
from sopgym.domains.warehouse_package_inspection.tools import DISTRACTORS, TOOLS

_TEXT = {"type": "string", "minLength": 1}

DOMAIN = DomainPack(
    name="warehouse_package_inspection",
    title="Warehouse package inspection and vendor chargebacks (logistics)",
    folder=Path(__file__).parent,
    paper_profiles=("sopbench",),  # SOP-Bench-style: its paper re-reads every episode
    tools=TOOLS,
    distractors=DISTRACTORS,
    generate=generate,
    solve=solve,
    index_keys={
        "purchase_orders": "po_number",
        "products": "gtin",
        "locations": "location_code",
        "vendors": "vendor_id",
        "chargeback_matrix": "rule_id",
    },
    input_schema={
        "type": "object",
        "properties": {
            "inspection_id": _TEXT,
            "po_number": _TEXT,
            "received_quantity": {"type": "integer", "minimum": 0},
            "receiving_location": _TEXT,
            "barcode_image": _TEXT,
            "package_image": _TEXT,
            "carrier": _TEXT,
            "received_date": _TEXT,
        },
        "required": [
            "inspection_id",
            "po_number",
            "received_quantity",
            "receiving_location",
            "barcode_image",
            "package_image",
            "carrier",
            "received_date",
        ],
    },
    output_schema={
        "type": "object",
        "properties": {
            "barcode_status": {"enum": ["match", "mismatch", "unreadable"]},
            "quantity_status": {
                "enum": [
                    "match",
                    "overage",
                    "underage",
                    "cancelled",
                    "severe_mismatch",
                    "not_checked",
                ]
            },
            "location_status": {"enum": ["correct", "misdirected", "not_checked"]},
            "damage_status": {"enum": ["intact", "minor_damage", "severe_damage", "not_checked"]},
            "chargeback_amount": {"type": "number", "minimum": 0, "x-tolerance": 0.005},
            "resolution_status": {
                "enum": [
                    "return_to_vendor",
                    "manual_review",
                    "transfer_to_correct_site",
                    "accept_with_chargeback",
                    "accept",
                ]
            },
        },
        "required": [
            "barcode_status",
            "quantity_status",
            "location_status",
            "damage_status",
            "chargeback_amount",
            "resolution_status",
        ],
        "additionalProperties": False,
    },
    dependencies={
        "lookup_product_by_gtin": ["decode_barcode_image"],
        "calculate_quantity_variance": ["get_purchase_order_line", "lookup_product_by_gtin"],
        "lookup_receiving_location": ["get_purchase_order_line", "lookup_product_by_gtin"],
        "detect_package_damage": ["lookup_product_by_gtin"],
        "get_chargeback_terms": ["get_purchase_order_line", "decode_barcode_image"],
    },
)

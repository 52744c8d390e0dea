"""The warehouse package inspection SOP as code: the reference policy that derives every label."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

SEVERE_VARIANCE_PERCENT = 20  # SOP §5: strictly above this share of expected units
MINOR_DAMAGE_PERCENT = 1.0  # SOP §7: dark area at or above this is damage
SEVERE_DAMAGE_PERCENT = 4.0  # ... and at or above this it is severe
CENT = Decimal("0.01")

# SOP §8: which discrepancy each check result raises (results absent here raise none).
DISCREPANCY_OF = {
    ("barcode", "mismatch"): "wrong_item",
    ("barcode", "unreadable"): "unreadable_label",
    ("quantity", "overage"): "overage",
    ("quantity", "underage"): "underage",
    ("quantity", "cancelled"): "cancelled_line",
    ("quantity", "severe_mismatch"): "severe_quantity_mismatch",
    ("location", "misdirected"): "misdirected",
    ("damage", "minor_damage"): "minor_damage",
    ("damage", "severe_damage"): "severe_damage",
}
VARIANCE_UNIT_TYPES = {"overage", "underage", "severe_quantity_mismatch"}


def barcode_result(scan: dict, product: dict | None, po_product_id: str) -> str:
    """SOP §4: unreadable, or match only when the decoded GTIN names the PO's product."""
    if not scan["decoded"]:
        return "unreadable"
    if product is None or not product["product_found"]:
        return "mismatch"
    return "match" if product["product_id"] == po_product_id else "mismatch"


def quantity_result(variance: dict) -> str:
    """SOP §5, first rule that applies."""
    if variance["expected_quantity"] == 0:
        return "cancelled"
    if abs(variance["variance_percent"]) > SEVERE_VARIANCE_PERCENT:
        return "severe_mismatch"
    if variance["variance_units"] > 0:
        return "overage"
    if variance["variance_units"] < 0:
        return "underage"
    return "match"


def damage_result(photo: dict) -> str:
    """SOP §7 bands on the measured dark-area percentage."""
    share = photo["dark_area_percent"]
    if share >= SEVERE_DAMAGE_PERCENT:
        return "severe_damage"
    if share >= MINOR_DAMAGE_PERCENT:
        return "minor_damage"
    return "intact"


def chargeback_line(terms: dict, unit_cost: float, units: int) -> tuple[Decimal, bool]:
    """SOP §8: flat fee + percent of (unit cost x units), capped, rounded half up to cents."""
    raw = Decimal(str(terms["flat_fee"])) + (
        Decimal(str(terms["percent_of_value"])) / 100 * Decimal(str(unit_cost)) * units
    )
    cap = Decimal(str(terms["max_amount"]))
    return min(raw, cap).quantize(CENT, rounding=ROUND_HALF_UP), raw > cap


def resolution(statuses: dict[str, str]) -> tuple[str, str]:
    """SOP §9: the first rule that applies decides; returns (resolution, rule)."""
    if statuses["barcode"] == "unreadable":
        return "manual_review", "unreadable_barcode"
    if statuses["barcode"] == "mismatch":
        return "return_to_vendor", "wrong_item"
    if statuses["quantity"] == "cancelled":
        return "return_to_vendor", "cancelled_line"
    if statuses["damage"] == "severe_damage":
        return "return_to_vendor", "severe_damage"
    if statuses["quantity"] == "severe_mismatch":
        return "manual_review", "severe_quantity_mismatch"
    if statuses["location"] == "misdirected":
        return "transfer_to_correct_site", "misdirected"
    if statuses["quantity"] in ("overage", "underage") or statuses["damage"] == "minor_damage":
        return "accept_with_chargeback", "minor_discrepancy"
    return "accept", "clean_receipt"


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    received = x["received_quantity"]
    po = run.call("get_purchase_order_line", po_number=x["po_number"])

    scan = run.call("decode_barcode_image", image_id=x["barcode_image"])
    product = run.call("lookup_product_by_gtin", gtin=scan["gtin"]) if scan["decoded"] else None
    statuses = {
        "barcode": barcode_result(scan, product, po["product_id"]),
        "quantity": "not_checked",
        "location": "not_checked",
        "damage": "not_checked",
    }
    variance_units = 0
    if statuses["barcode"] == "match":
        variance = run.call(
            "calculate_quantity_variance", po_number=x["po_number"], received_quantity=received
        )
        variance_units = abs(variance["variance_units"])
        statuses["quantity"] = quantity_result(variance)
        location = run.call("lookup_receiving_location", location_code=x["receiving_location"])
        same_site = location["warehouse_code"] == po["ship_to_warehouse"]
        statuses["location"] = "correct" if same_site else "misdirected"
        photo = run.call("detect_package_damage", image_id=x["package_image"])
        statuses["damage"] = damage_result(photo)

    lines: list[dict] = []
    for check, status in statuses.items():
        kind = DISCREPANCY_OF.get((check, status))
        if kind is None:
            continue
        terms = run.call("get_chargeback_terms", discrepancy_type=kind, unit_cost=po["unit_cost"])
        units = variance_units if kind in VARIANCE_UNIT_TYPES else received
        amount, capped = chargeback_line(terms, po["unit_cost"], units)
        lines.append({"type": kind, "units": units, "amount": str(amount), "capped": capped})
    total = sum((Decimal(line["amount"]) for line in lines), Decimal("0.00"))
    outcome, rule = resolution(statuses)

    return Solution(
        outputs={
            "barcode_status": statuses["barcode"],
            "quantity_status": statuses["quantity"],
            "location_status": statuses["location"],
            "damage_status": statuses["damage"],
            "chargeback_amount": float(total),
            "resolution_status": outcome,
        },
        decisions={
            "resolution_rule": rule,
            "chargeback_lines": lines,
            "any_line_capped": any(line["capped"] for line in lines),
            "partial_cancellation": po["line_status"] == "partially_cancelled",
            "decode_failure": scan["failure_reason"],
        },
    )

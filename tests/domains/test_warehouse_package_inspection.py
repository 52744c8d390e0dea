"""Hand-checked cases of the warehouse package inspection SOP and its tools.

Each policy case builds a one-PO dataset by hand, draws its two images (a real EAN-13 symbol
and a package photo with a dark rectangle of known pixel area) and checks the inspection
summary against amounts worked out by hand from the chargeback matrix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image, ImageDraw

from sopgym.core.domain import PolicyRun
from sopgym.core.tables import Tables
from sopgym.core.tasks import Task
from sopgym.domains.warehouse_package_inspection import DOMAIN
from sopgym.domains.warehouse_package_inspection.generator import chargeback_matrix
from sopgym.domains.warehouse_package_inspection.render import render_barcode
from sopgym.domains.warehouse_package_inspection.symbology import (
    SymbolError,
    check_digit,
    decode,
    encode,
)
from tests.domains.refusals import assert_refused

ORDERED_GTIN = "4006381333931"  # a well-known valid EAN-13
OTHER_GTIN = "0012345678905"  # valid, registered to another product
UNKNOWN_GTIN = "0614141000036"  # valid, in no product record
PO = "PO-4500000"
ATL_DOCK, DFW_DOCK = "RCV-1001", "RCV-2002"


def _tables(ordered: int, cancelled: int, unit_cost: float) -> Tables:
    status = (
        "open" if not cancelled else "cancelled" if cancelled == ordered else "partially_cancelled"
    )
    return Tables(
        {
            "purchase_orders": pd.DataFrame(
                [
                    {
                        "po_number": PO,
                        "vendor_id": "V-10000",
                        "product_id": "SKU-300000",
                        "line_status": status,
                        "ordered_quantity": ordered,
                        "cancelled_quantity": cancelled,
                        "unit_cost": unit_cost,
                        "ship_to_warehouse": "ATL2",
                        "order_date": "2025-10-01",
                    }
                ]
            ),
            "products": pd.DataFrame(
                [
                    _product("SKU-300000", ORDERED_GTIN),
                    _product("SKU-300011", OTHER_GTIN),
                ]
            ),
            "locations": pd.DataFrame(
                [
                    _location(ATL_DOCK, "ATL2", "Atlanta South DC"),
                    _location(DFW_DOCK, "DFW1", "Dallas Fort Worth DC"),
                ]
            ),
            "vendors": pd.DataFrame(
                [
                    {
                        "vendor_id": "V-10000",
                        "vendor_name": "Northwind Supply",
                        "on_time_percent": 95.0,
                        "fill_rate_percent": 97.5,
                    }
                ]
            ),
            "chargeback_matrix": pd.DataFrame(chargeback_matrix()),
        }
    )


def _product(product_id: str, gtin: str) -> dict[str, Any]:
    return {
        "product_id": product_id,
        "gtin": gtin,
        "description": "Ceramic Mug Set (blue)",
        "category": "Housewares",
        "unit_of_measure": "each",
        "case_pack": 12,
    }


def _location(code: str, warehouse: str, site: str) -> dict[str, str]:
    return {
        "location_code": code,
        "warehouse_code": warehouse,
        "site_name": site,
        "location_type": "inbound_dock",
    }


def _photo(path: Path, dark_width: int, dark_height: int) -> None:
    """A 160x100 photo (16,000 px) with one black rectangle of exactly w x h pixels."""
    image = Image.new("RGB", (160, 100), (176, 130, 84))
    if dark_width and dark_height:
        ImageDraw.Draw(image).rectangle((10, 10, 9 + dark_width, 9 + dark_height), fill=0)
    image.save(path)


def _inspect(
    tmp_path: Path,
    *,
    ordered: int = 50,
    cancelled: int = 0,
    unit_cost: float = 12.50,
    received: int = 50,
    gtin: str = ORDERED_GTIN,
    defect: str | None = None,
    dock: str = ATL_DOCK,
    dark: tuple[int, int] = (0, 0),
) -> tuple[dict[str, Any], list[str]]:
    """Run the reference policy on one hand-built receipt; returns (outputs, called tools)."""
    render_barcode(gtin, tmp_path / "bc_000001.png", defect)
    _photo(tmp_path / "pkg_000001.png", *dark)
    ctx = DOMAIN.context(_tables(ordered, cancelled, unit_cost), tmp_path)
    run = PolicyRun(DOMAIN.tool_map(), ctx)
    task = Task(
        id="warehouse_package_inspection-test",
        domain=DOMAIN.name,
        inputs={
            "inspection_id": "INS-700000",
            "po_number": PO,
            "received_quantity": received,
            "receiving_location": dock,
            "barcode_image": "bc_000001.png",
            "package_image": "pkg_000001.png",
            "carrier": "Saia",
            "received_date": "2025-10-20",
        },
    )
    solution = DOMAIN.solve(task, run)
    return solution.outputs, [c.name for c in run.calls]


NOT_CHECKED = {
    "quantity_status": "not_checked",
    "location_status": "not_checked",
    "damage_status": "not_checked",
}


def test_clean_receipt_is_accepted_without_chargeback(tmp_path: Path) -> None:
    outputs, calls = _inspect(tmp_path)
    assert outputs == {
        "barcode_status": "match",
        "quantity_status": "match",
        "location_status": "correct",
        "damage_status": "intact",
        "chargeback_amount": 0.0,
        "resolution_status": "accept",
    }
    assert "get_chargeback_terms" not in calls


@pytest.mark.parametrize("gtin", [OTHER_GTIN, UNKNOWN_GTIN])
def test_wrong_item_skips_other_checks_and_returns(tmp_path: Path, gtin: str) -> None:
    # wrong_item, low band: 75 + 10% x 12.50 x 50 = 137.50; the damage would be ignored
    outputs, calls = _inspect(tmp_path, gtin=gtin, received=50, dark=(40, 20), dock=DFW_DOCK)
    assert outputs == {
        "barcode_status": "mismatch",
        **NOT_CHECKED,
        "chargeback_amount": 137.50,
        "resolution_status": "return_to_vendor",
    }
    assert calls == [
        "get_purchase_order_line",
        "decode_barcode_image",
        "lookup_product_by_gtin",
        "get_chargeback_terms",
    ]


@pytest.mark.parametrize("defect", ["smear", "torn"])
def test_unreadable_barcode_goes_to_manual_review(tmp_path: Path, defect: str) -> None:
    # unreadable_label, low band: 25 + 2% x 12.50 x 50 = 37.50
    outputs, calls = _inspect(tmp_path, defect=defect)
    assert outputs == {
        "barcode_status": "unreadable",
        **NOT_CHECKED,
        "chargeback_amount": 37.50,
        "resolution_status": "manual_review",
    }
    assert calls == ["get_purchase_order_line", "decode_barcode_image", "get_chargeback_terms"]


def test_variance_of_exactly_20_percent_of_expected_is_an_overage(tmp_path: Path) -> None:
    # expected 60 - 10 = 50, received 60: +10 units = 20.00 % (not severe)
    # overage, low band: 15 + 5% x 12.50 x 10 = 21.25
    outputs, _ = _inspect(tmp_path, ordered=60, cancelled=10, received=60)
    assert outputs["quantity_status"] == "overage"
    assert outputs["chargeback_amount"] == 21.25
    assert outputs["resolution_status"] == "accept_with_chargeback"


def test_full_receipt_after_partial_cancellation_is_a_match(tmp_path: Path) -> None:
    outputs, _ = _inspect(tmp_path, ordered=80, cancelled=30, received=50)
    assert (outputs["quantity_status"], outputs["resolution_status"]) == ("match", "accept")


def test_severe_shortage_rounds_half_up_and_needs_review(tmp_path: Path) -> None:
    # expected 50, received 39: -11 units = -22 %; severe_quantity_mismatch, low band:
    # 100 + 15% x 12.50 x 11 = 120.625 -> 120.63 (half up)
    outputs, _ = _inspect(tmp_path, received=39)
    assert outputs["quantity_status"] == "severe_mismatch"
    assert outputs["chargeback_amount"] == 120.63
    assert outputs["resolution_status"] == "manual_review"


def test_cancelled_line_outranks_misdirection(tmp_path: Path) -> None:
    # cancelled_line: 50 + 10% x 12.50 x 12 = 65.00; misdirected: 60 + 3% x 12.50 x 12 = 64.50
    outputs, calls = _inspect(tmp_path, ordered=40, cancelled=40, received=12, dock=DFW_DOCK)
    assert outputs == {
        "barcode_status": "match",
        "quantity_status": "cancelled",
        "location_status": "misdirected",
        "damage_status": "intact",
        "chargeback_amount": 129.50,
        "resolution_status": "return_to_vendor",
    }
    assert calls.count("get_chargeback_terms") == 2


def test_severe_damage_with_underage_high_value(tmp_path: Path) -> None:
    # 40 x 20 = 800 dark px of 16,000 = 5.00 % -> severe_damage
    # underage, high band: 20 + 8% x 150 x 5 = 80.00; severe_damage: 45 + 12% x 150 x 95 = 1755
    outputs, _ = _inspect(tmp_path, ordered=100, unit_cost=150.0, received=95, dark=(40, 20))
    assert outputs["quantity_status"] == "underage"
    assert outputs["damage_status"] == "severe_damage"
    assert outputs["chargeback_amount"] == 1835.00
    assert outputs["resolution_status"] == "return_to_vendor"


def test_chargeback_line_is_capped(tmp_path: Path) -> None:
    # wrong_item, high band: 75 + 5% x 250 x 200 = 2575 > max 1500
    outputs, _ = _inspect(tmp_path, ordered=200, unit_cost=250.0, received=200, gtin=OTHER_GTIN)
    assert outputs["chargeback_amount"] == 1500.00


def test_misdirected_with_minor_damage_is_transferred(tmp_path: Path) -> None:
    # unit cost 20.00 falls in the standard band; 20 x 8 = 160 px = 1.00 % -> minor_damage
    # misdirected: 60 + 2% x 20 x 30 = 72.00; minor_damage: 20 + 5% x 20 x 30 = 50.00
    outputs, _ = _inspect(
        tmp_path, ordered=30, unit_cost=20.0, received=30, dock=DFW_DOCK, dark=(20, 8)
    )
    assert outputs["location_status"] == "misdirected"
    assert outputs["damage_status"] == "minor_damage"
    assert outputs["chargeback_amount"] == 122.00
    assert outputs["resolution_status"] == "transfer_to_correct_site"


@pytest.mark.parametrize(
    ("dark", "percent", "status"),
    [((15, 10), 0.94, "intact"), ((20, 8), 1.0, "minor_damage"), ((32, 20), 4.0, "severe_damage")],
)
def test_damage_bands_at_their_edges(
    tmp_path: Path, dark: tuple[int, int], percent: float, status: str
) -> None:
    outputs, _ = _inspect(tmp_path, dark=dark)
    ctx = DOMAIN.context(_tables(50, 0, 12.5), tmp_path)
    photo = _tool("detect_package_damage", {"image_id": "pkg_000001.png"}, ctx)
    assert photo["dark_area_percent"] == percent
    assert photo["dark_pixel_count"] == dark[0] * dark[1]
    assert outputs["damage_status"] == status


# -- tools ---------------------------------------------------------------------------------


def _tool(name: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return DOMAIN.tool_map()[name](args, ctx)


@pytest.fixture
def ctx(tmp_path: Path) -> Any:
    render_barcode(ORDERED_GTIN, tmp_path / "bc_000001.png")
    _photo(tmp_path / "pkg_000001.png", 0, 0)
    (tmp_path / "bad_000001.png").write_text("not an image")
    return DOMAIN.context(_tables(50, 0, 12.5), tmp_path)


@pytest.mark.parametrize(
    ("name", "args", "code", "field"),
    [
        ("get_purchase_order_line", {"po_number": "PO-9999999"}, "not_found", "po_number"),
        (
            "calculate_quantity_variance",
            {"po_number": "PO-9999999", "received_quantity": 3},
            "not_found",
            "po_number",
        ),
        (
            "lookup_receiving_location",
            {"location_code": "RCV-9999"},
            "not_found",
            "location_code",
        ),
        ("decode_barcode_image", {"image_id": "bc_999999.png"}, "not_found", "image_id"),
        ("detect_package_damage", {"image_id": "pkg_999999.png"}, "not_found", "image_id"),
        ("lookup_product_by_sku", {"product_id": "SKU-999999"}, "not_found", "product_id"),
        ("get_vendor_scorecard", {"vendor_id": "V-99999"}, "not_found", "vendor_id"),
        (  # a file that is not an image
            "decode_barcode_image",
            {"image_id": "bad_000001.png"},
            "invalid_value",
            "image_id",
        ),
        (  # image ids cannot leave the files folder
            "decode_barcode_image",
            {"image_id": "../bc_000001.png"},
            "invalid_value",
            None,
        ),
    ],
)
def test_refusals(ctx: Any, name: str, args: dict[str, Any], code: str, field: str | None) -> None:
    assert_refused(DOMAIN, ctx, name, args, code, field)


def test_barcode_is_decoded_from_pixels(ctx: Any) -> None:
    scan = _tool("decode_barcode_image", {"image_id": "bc_000001.png"}, ctx)
    assert scan == {
        "image_id": "bc_000001.png",
        "decoded": True,
        "gtin": ORDERED_GTIN,
        "module_width_px": 2,
        "failure_reason": None,
    }


def test_a_package_photo_is_not_a_barcode(ctx: Any) -> None:
    scan = _tool("decode_barcode_image", {"image_id": "pkg_000001.png"}, ctx)
    assert scan["decoded"] is False and scan["gtin"] is None and scan["failure_reason"]


def test_unknown_gtin_is_reported_not_raised(ctx: Any) -> None:
    product = _tool("lookup_product_by_gtin", {"gtin": UNKNOWN_GTIN}, ctx)
    assert product["product_found"] is False and product["product_id"] is None


def test_variance_tool_reports_expected_units_net_of_cancellations(ctx: Any) -> None:
    cancelled_ctx = DOMAIN.context(_tables(40, 40, 12.5), ctx.files_dir)
    full = _tool("calculate_quantity_variance", {"po_number": PO, "received_quantity": 7}, ctx)
    assert (full["expected_quantity"], full["variance_units"], full["variance_percent"]) == (
        50,
        -43,
        -86.0,
    )
    none = _tool(
        "calculate_quantity_variance", {"po_number": PO, "received_quantity": 7}, cancelled_ctx
    )
    assert (none["expected_quantity"], none["variance_percent"]) == (0, None)


@pytest.mark.parametrize(
    ("unit_cost", "band"),
    [
        (19.99, "low_value"),
        (20.0, "standard_value"),
        (99.99, "standard_value"),
        (100.0, "high_value"),
    ],
)
def test_chargeback_cost_bands(ctx: Any, unit_cost: float, band: str) -> None:
    terms = _tool(
        "get_chargeback_terms", {"discrepancy_type": "overage", "unit_cost": unit_cost}, ctx
    )
    assert (terms["cost_band"], terms["rule_id"]) == (band, f"overage/{band}")


def test_symbology_round_trip_and_check_digit() -> None:
    assert check_digit(ORDERED_GTIN[:12]) == ORDERED_GTIN[12]
    assert decode(encode(ORDERED_GTIN)) == ORDERED_GTIN
    with pytest.raises(SymbolError):
        encode("4006381333932")
    flipped = encode(ORDERED_GTIN)
    flipped = flipped[:60] + ("0" if flipped[60] == "1" else "1") + flipped[61:]
    with pytest.raises(SymbolError):
        decode(flipped)

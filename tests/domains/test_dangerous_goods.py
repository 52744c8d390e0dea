"""Hand-checked cases of the dangerous goods reference policy and its tools' refusals.

Each case builds a tiny dataset by hand, so the expected class follows from the SOP text
alone (section numbers refer to domains/dangerous_goods/sop.md).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd
import pytest

from sopgym.core.domain import PolicyRun
from sopgym.core.registry import load_domain
from sopgym.core.tables import Tables
from sopgym.core.tasks import Solution, Task
from tests.domains.refusals import assert_refused

DOMAIN = load_domain("dangerous_goods")
PRODUCT = "PRD-400000"
SDS = "SDS-700000"


SHEET = {
    "product_id": PRODUCT,
    "sds_id": SDS,
    "revision_date": "2024-06-01",
    "un_number": "UN1090",
    "waste_stream_code": "WS-305",
    "signal_word": "Danger",
    "hazard_statements": "H225;H319",
    "severity_score": 3,
}
GUIDELINE = {
    "sds_id": SDS,
    "guideline_id": "HG-900000",
    "status": "approved",
    "protective_equipment": "nitrile gloves;safety glasses",
    "storage_group": "flammables cabinet",
    "severity_score": 3,
}
TRANSPORT = [  # UN1090: road 3, sea 3, air 4; UN1005: road 5, sea 5, air never assessed
    ("UN1090", "Acetone", "3", "II", 3, 3, 4),
    ("UN1005", "Ammonia, anhydrous", "2.3", "-", 5, 5, None),
]
DISPOSAL = [("WS-305", "incineration", True, 3), ("WS-510", "under review", True, None)]


def _tables(sds: dict[str, Any] | None = None, guideline: dict[str, Any] | None = None) -> Tables:
    """One product; ``sds``/``guideline`` override fields of the defaults, ``None`` drops them."""
    return Tables(
        {
            "products": pd.DataFrame(
                [{"product_id": PRODUCT, "supplier": "Nordchem GmbH", "emergency_phone": "+44 1"}]
            ),
            "safety_data_sheets": pd.DataFrame(
                [] if sds is None else [{**SHEET, **sds}], columns=list(SHEET)
            ),
            "handling_guidelines": pd.DataFrame(
                [] if guideline is None else [{**GUIDELINE, **guideline}], columns=list(GUIDELINE)
            ),
            "transport_requirements": pd.DataFrame(
                TRANSPORT,
                columns=[
                    "un_number",
                    "proper_shipping_name",
                    "un_class_division",
                    "packing_group",
                    "road_score",
                    "sea_score",
                    "air_score",
                ],
            ),
            "disposal_guidelines": pd.DataFrame(
                DISPOSAL,
                columns=[
                    "waste_stream_code",
                    "method",
                    "licensed_carrier_required",
                    "severity_score",
                ],
            ),
        }
    )


def _solve(tables: Tables, **inputs: Any) -> tuple[Solution, list[str], PolicyRun]:
    task = Task(
        id="dangerous_goods-test",
        domain="dangerous_goods",
        inputs={
            "product_id": PRODUCT,
            "product_name": "Apex acetone technical grade",
            "supplier": "Nordchem GmbH",
            "declared_un_number": "UN1090",
            "transport_mode": "road",
            "assessment_date": "2026-03-10",
            **inputs,
        },
    )
    run = PolicyRun(DOMAIN.tool_map(), DOMAIN.context(tables, None))
    solution = DOMAIN.solve(task, run)
    return solution, [c.name for c in run.calls], run


def _core(solution: Solution) -> tuple:
    o = solution.outputs
    return (
        o["hazard_class"],
        o["total_hazard_score"],
        o["data_completeness"],
        o["imputed_component"],
        o["declaration_check"],
    )


ALL_CALLS = [
    "get_safety_data_sheet",
    "get_handling_guidelines",
    "get_transport_requirements",
    "get_disposal_guidelines",
    "file_hazard_classification",
]


def test_complete_data_sums_the_four_scores() -> None:
    solution, calls, run = _solve(_tables(sds={}, guideline={}))
    # SDS 3 + handling 3 + transport (UN1090, road) 3 + disposal (WS-305) 3 = 12
    assert _core(solution) == ("B", 12, "complete", "none", "consistent")
    assert calls == ALL_CALLS
    assert run.calls[-1].arguments == {
        "product_id": PRODUCT,
        "class_code": "B",
        "cumulative_score": 12,
    }
    assert solution.outputs["filing_reference"].startswith("DGF-")


@pytest.mark.parametrize(
    ("sds_score", "handling", "mode", "total", "hazard_class"),
    [
        (1, 1, "road", 8, "A"),
        (1, 2, "road", 9, "B"),
        (3, 3, "road", 12, "B"),
        (3, 4, "road", 13, "C"),
        (5, 5, "road", 16, "C"),
        (5, 5, "air", 17, "D"),
    ],
)
def test_class_band_edges(
    sds_score: int, handling: int, mode: str, total: int, hazard_class: str
) -> None:
    # transport for UN1090: road 3, air 4; disposal WS-305: 3
    solution, _, _ = _solve(
        _tables(sds={"severity_score": sds_score}, guideline={"severity_score": handling}),
        transport_mode=mode,
    )
    assert _core(solution) == (hazard_class, total, "complete", "none", "consistent")


def test_draft_handling_guideline_is_imputed_with_the_highest_usable_score() -> None:
    solution, calls, _ = _solve(
        _tables(sds={"severity_score": 2}, guideline={"status": "draft", "severity_score": 1}),
        transport_mode="air",
    )
    # usable: SDS 2, transport (air) 4, disposal 3; handling replaced by max = 4
    assert _core(solution) == ("C", 2 + 4 + 3 + 4, "imputed", "handling", "consistent")
    assert calls == ALL_CALLS


def test_absent_handling_guideline_is_imputed() -> None:
    solution, _, _ = _solve(_tables(sds={"severity_score": 1}, guideline=None))
    # SDS 1, transport 3, disposal 3, handling -> 3
    assert _core(solution) == ("B", 10, "imputed", "handling", "consistent")


def test_unassessed_transport_mode_is_imputed() -> None:
    solution, _, run = _solve(
        _tables(sds={"un_number": "UN1005", "severity_score": 5}, guideline={}),
        declared_un_number="UN1005",
        transport_mode="air",
    )
    assert run.calls[2].arguments == {"un_number": "UN1005", "transport_mode": "air"}
    # SDS 5, handling 3, disposal 3, transport -> 5
    assert _core(solution) == ("C", 16, "imputed", "transport", "consistent")


def test_pending_disposal_stream_is_imputed() -> None:
    solution, _, _ = _solve(
        _tables(sds={"waste_stream_code": "WS-510", "severity_score": 5}, guideline={})
    )
    # SDS 5, handling 3, transport 3, disposal -> 5
    assert _core(solution) == ("C", 16, "imputed", "disposal", "consistent")


def test_two_missing_scores_cannot_be_decided() -> None:
    solution, calls, run = _solve(
        _tables(sds={"waste_stream_code": "WS-999"}, guideline={"severity_score": None})
    )
    assert _core(solution) == ("unable_to_decide", 0, "insufficient", "none", "consistent")
    assert calls == ALL_CALLS
    assert run.calls[-1].arguments["class_code"] == "UNDETERMINED"
    assert run.calls[-1].arguments["cumulative_score"] == 0


def test_three_missing_scores_cannot_be_decided() -> None:
    solution, calls, _ = _solve(
        _tables(sds={"un_number": "UN2735", "waste_stream_code": "WS-510"}, guideline=None),
        declared_un_number="UN2735",
    )
    assert _core(solution) == ("unable_to_decide", 0, "insufficient", "none", "consistent")
    assert calls == ALL_CALLS


def test_missing_sds_stops_before_the_other_sources() -> None:
    solution, calls, _ = _solve(_tables(sds=None, guideline=None))
    assert _core(solution) == ("unable_to_decide", 0, "insufficient", "none", "not_checked")
    assert calls == ["get_safety_data_sheet", "file_hazard_classification"]


def test_outdated_sds_stops_but_keeps_the_declaration_check() -> None:
    solution, calls, _ = _solve(
        _tables(sds={"revision_date": "2021-03-09", "un_number": "UN1005"}, guideline={})
    )
    assert _core(solution) == ("unable_to_decide", 0, "insufficient", "none", "un_number_mismatch")
    assert calls == ["get_safety_data_sheet", "file_hazard_classification"]


def test_sds_revised_exactly_five_years_ago_is_current() -> None:
    solution, calls, _ = _solve(_tables(sds={"revision_date": "2021-03-10"}, guideline={}))
    assert solution.outputs["data_completeness"] == "complete"
    assert calls == ALL_CALLS


def test_unscored_sds_cannot_be_decided() -> None:
    solution, calls, _ = _solve(_tables(sds={"severity_score": None}, guideline={}))
    assert _core(solution)[:3] == ("unable_to_decide", 0, "insufficient")
    assert calls == ["get_safety_data_sheet", "file_hazard_classification"]


def test_declared_un_number_never_replaces_the_sds_one() -> None:
    solution, _, run = _solve(_tables(sds={}, guideline={}), declared_un_number="UN1005")
    assert run.calls[2].arguments["un_number"] == "UN1090"
    # transport scored for the SDS's UN1090 (road 3), not the declared UN1005 (road 5)
    assert _core(solution) == ("B", 12, "complete", "none", "un_number_mismatch")


# -- tool refusals ------------------------------------------------------------------------


def _ctx():
    return DOMAIN.context(_tables(sds={}, guideline={}), None)


@pytest.mark.parametrize(
    ("tool", "arguments", "code", "field"),
    [
        ("get_safety_data_sheet", {"product_id": "PRD-999999"}, "not_found", "product_id"),
        (
            "file_hazard_classification",
            {"product_id": "PRD-999999", "class_code": "A", "cumulative_score": 6},
            "not_found",
            None,
        ),
        (  # a score for an undetermined class, or none for a decided one
            "file_hazard_classification",
            {"product_id": PRODUCT, "class_code": "UNDETERMINED", "cumulative_score": 7},
            "invalid_value",
            "cumulative_score",
        ),
        (
            "file_hazard_classification",
            {"product_id": PRODUCT, "class_code": "B", "cumulative_score": 0},
            "invalid_value",
            "cumulative_score",
        ),
    ],
)
def test_refusals(tool: str, arguments: dict, code: str, field: str | None) -> None:
    assert_refused(DOMAIN, _ctx(), tool, arguments, code, field)


def test_undetermined_filing_is_held() -> None:
    held = DOMAIN.tool_map()["file_hazard_classification"](
        {"product_id": PRODUCT, "class_code": "UNDETERMINED", "cumulative_score": 0}, _ctx()
    )
    assert held["register_status"] == "on_hold"


def test_lookups_of_unknown_records_report_not_found_flags() -> None:
    tools, ctx = DOMAIN.tool_map(), _ctx()
    assert (
        tools["get_handling_guidelines"]({"sds_id": "SDS-123456"}, ctx)["guideline_found"] is False
    )
    transport = tools["get_transport_requirements"](
        {"un_number": "UN2735", "transport_mode": "sea"}, ctx
    )
    assert transport["requirement_found"] is False
    assert transport["transport_severity_score"] is None
    assert (
        tools["get_disposal_guidelines"]({"waste_stream_code": "WS-999"}, ctx)["disposal_found"]
        is False
    )


def test_scores_come_back_as_plain_integers() -> None:
    result = DOMAIN.tool_map()["get_transport_requirements"](
        {"un_number": "UN1005", "transport_mode": "sea"}, _ctx()
    )
    assert result["transport_severity_score"] == 5
    assert type(result["transport_severity_score"]) is int


# -- branch coverage of the generated tasks ---------------------------------------------------


def test_every_missing_data_path_appears_at_least_three_times() -> None:
    from tests.helpers import domain_data

    golds = list(domain_data("dangerous_goods").gold.values())
    branches = Counter(g.decisions["branch"] for g in golds)
    for branch in (
        "sds_not_found",
        "sds_outdated",
        "sds_unscored",
        "0_secondary_missing",
        "1_secondary_missing",
        "2_secondary_missing",
        "3_secondary_missing",
    ):
        assert branches[branch] >= 3, (branch, branches)
    reasons = Counter(
        (component, reason)
        for g in golds
        for component, reason in g.decisions.get("missing_reasons", {}).items()
    )
    for pair in [
        ("handling", "absent"),
        ("handling", "draft"),
        ("handling", "unscored"),
        ("transport", "not_listed"),
        ("transport", "mode_not_assessed"),
        ("disposal", "not_listed"),
        ("disposal", "under_review"),
    ]:
        assert reasons[pair] >= 3, (pair, reasons)
    imputed_classes = Counter(
        g.outputs["hazard_class"] for g in golds if g.outputs["data_completeness"] == "imputed"
    )
    assert all(imputed_classes[c] >= 3 for c in "ABCD"), imputed_classes

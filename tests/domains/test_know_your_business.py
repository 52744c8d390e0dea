"""Hand-checked cases of the know-your-business reference policy and its tools' refusals.

Each case edits a tiny hand-built dataset (one applicant company) so the expected outcome
follows from the SOP text alone (domains/know_your_business/sop.md).
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
from sopgym.domains.know_your_business.policy import CHECKS
from tests.domains.refusals import assert_refused

DOMAIN = load_domain("know_your_business")
APP = "KYB-510000"
NUMBER = "C40000000"
TIN = "T300000000"
LEGAL = "Northwind Logistics Ltd"
ADDRESS = "12 Mill Lane, Wexbridge"
VERDICT = (*CHECKS, "kyb_decision")  # the checks the cases below pin, in order


def _owner(name: str, percent: int, country: str = "XA", kind: str = "individual") -> dict:
    return {
        "owner_name": name,
        "owner_type": kind,
        "ownership_percent": percent,
        "country": country,
    }


def _license(status: str = "active", expiry: str = "2027-01-01", n: int = 1) -> dict:
    return {
        "license_number": f"L-40000000-{n}",
        "registration_number": NUMBER,
        "license_type": "money_transmission",
        "status": status,
        "issued_date": "2024-01-01",
        "expiry_date": expiry,
    }


def _tables(
    registry: dict[str, Any] | None = None,
    tax: dict[str, Any] | None = None,
    licenses: list[dict] | None = None,
    owners: list[dict] | None = None,
) -> Tables:
    """One applicant; ``registry``/``tax`` override fields, ``{"absent": True}`` drops it."""
    registry = {
        "registration_number": NUMBER,
        "jurisdiction": "XA",
        "legal_name": LEGAL,
        "status": "active",
        "incorporation_date": "2015-04-01",
        "registered_address": ADDRESS,
        **(registry or {}),
    }
    tax = {"tax_id": TIN, "registered_name": LEGAL, "status": "active", **(tax or {})}
    owners = (
        owners if owners is not None else [_owner("Amelia Abbott", 70), _owner("Leon Ibsen", 30)]
    )
    holdings = [
        {"holding_id": f"H-{n}", "registration_number": NUMBER, **o} for n, o in enumerate(owners)
    ]
    return Tables(
        {
            "applications": pd.DataFrame(
                [{"application_id": APP, "business_name": LEGAL, "application_date": "2026-03-10"}]
            ),
            "business_registry": pd.DataFrame([] if registry.pop("absent", False) else [registry]),
            "tax_records": pd.DataFrame([] if tax.pop("absent", False) else [tax]),
            "licenses": pd.DataFrame(
                licenses or [],
                columns=[
                    "license_number",
                    "registration_number",
                    "license_type",
                    "status",
                    "issued_date",
                    "expiry_date",
                ],
            ),
            "ownership": pd.DataFrame(holdings),
            "sanctions_list": pd.DataFrame(
                [
                    {
                        "entry_id": "SL-1001",
                        "name": "Radomir Vaskov",
                        "party_type": "individual",
                        "list_name": "Consolidated Financial Sanctions",
                    },
                    {
                        "entry_id": "SL-1002",
                        "name": "Nightjar Commodities",
                        "party_type": "organization",
                        "list_name": "Consolidated Financial Sanctions",
                    },
                ]
            ),
            "jurisdictions": pd.DataFrame(
                [
                    {"country_code": c, "name": n, "risk_score": s, "last_reviewed": "2025-11-30"}
                    for c, n, s in [
                        ("XA", "Aldmere", 18),
                        ("XL", "Lunmoor", 39),
                        ("XM", "Marrow Sound", 40),
                        ("XJ", "Jorvik Bay", 69),
                        ("XK", "Kessel Strand", 70),
                    ]
                ]
            ),
        }
    )


def _solve(tables: Tables, **inputs: Any) -> tuple[Solution, PolicyRun]:
    application = {
        "application_id": APP,
        "business_name": LEGAL,
        "business_type": "software",
        "registration_number": NUMBER,
        "jurisdiction": "XA",
        "tax_id": TIN,
        "registered_address": ADDRESS,
        "application_date": "2026-03-10",
        **inputs,
    }
    application = {k: v for k, v in application.items() if v is not None}
    task = Task(id="know_your_business-test", domain="know_your_business", inputs=application)
    run = PolicyRun(DOMAIN.tool_map(), DOMAIN.context(tables, None))
    return DOMAIN.solve(task, run), run


def _checks(solution: Solution) -> tuple[str, ...]:
    return tuple(solution.outputs[name] for name in VERDICT)


def _names(run: PolicyRun) -> list[str]:
    return [c.name for c in run.calls]


CLEAN = ("verified", "verified", "not_required", "transparent", "clear", "low", "approve")
NOT_CHECKED = ("not_checked",) * 6


# -- completeness and registry --------------------------------------------------------------


def test_clean_unregulated_company_is_approved() -> None:
    solution, run = _solve(_tables())
    assert _checks(solution) == CLEAN
    assert _names(run) == [
        "lookup_business_registry",
        "verify_tax_identity",
        "get_ownership_structure",
        "screen_sanctions",
        "screen_sanctions",
        "screen_sanctions",
        "get_jurisdiction_risk",
        "record_kyb_decision",
    ]
    assert run.calls[1].arguments == {"tax_id": TIN, "legal_name": LEGAL}
    assert run.calls[-1].arguments == {"application_id": APP, "outcome": "approve"}
    assert solution.outputs["case_reference"].startswith("CASE-")


@pytest.mark.parametrize(
    ("absent", "requested"),
    [
        (("tax_id",), ["tax_id"]),
        (("registration_number", "jurisdiction"), ["registration_number", "jurisdiction"]),
        (
            ("jurisdiction", "tax_id", "registration_number"),
            ["registration_number", "jurisdiction", "tax_id"],
        ),
    ],
)
def test_incomplete_application_waits_for_the_applicant(
    absent: tuple[str, ...], requested: list[str]
) -> None:
    solution, run = _solve(_tables(), **dict.fromkeys(absent))
    assert _checks(solution) == (*NOT_CHECKED, "awaiting_information")
    assert _names(run) == ["request_missing_information", "record_kyb_decision"]
    assert run.calls[0].arguments["missing_items"] == requested


def test_omitted_address_is_taken_from_the_registry() -> None:
    solution, _ = _solve(_tables(), registered_address=None)
    assert _checks(solution) == CLEAN


def test_case_and_punctuation_do_not_make_a_mismatch() -> None:
    solution, _ = _solve(
        _tables(),
        business_name="NORTHWIND LOGISTICS LTD.",
        registered_address="12 mill lane ,wexbridge",
    )
    assert _checks(solution) == CLEAN


@pytest.mark.parametrize(
    "inputs",
    [{"business_name": "Harbor Direct"}, {"registered_address": "300 Mill Lane, Wexbridge"}],
)
def test_name_or_address_mismatch_escalates(inputs: dict) -> None:
    solution, run = _solve(_tables(), **inputs)
    assert _checks(solution) == ("details_mismatch", *CLEAN[1:6], "escalate")
    assert "get_jurisdiction_risk" in _names(run)  # every check still runs


@pytest.mark.parametrize("inputs", [{"registration_number": "C90000001"}, {"jurisdiction": "XM"}])
def test_company_missing_from_the_registry_stops_and_escalates(inputs: dict) -> None:
    solution, run = _solve(_tables(), **inputs)
    assert _checks(solution) == ("not_found", *("not_checked",) * 5, "escalate")
    assert _names(run) == ["lookup_business_registry", "record_kyb_decision"]


@pytest.mark.parametrize("status", ["dissolved", "suspended"])
def test_inactive_company_is_escalated_after_all_checks(status: str) -> None:
    solution, run = _solve(_tables(registry={"status": status}))
    assert _checks(solution) == ("inactive", *CLEAN[1:6], "escalate")
    assert len(run.calls) == 8


# -- tax and licences ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tax", "expected"),
    [
        ({"absent": True}, "invalid"),
        ({"status": "revoked"}, "invalid"),
        ({"registered_name": "Stonegate Trading BV"}, "name_mismatch"),
    ],
)
def test_tax_identity_problems_escalate(tax: dict, expected: str) -> None:
    solution, _ = _solve(_tables(tax=tax))
    assert _checks(solution) == ("verified", expected, *CLEAN[2:6], "escalate")


@pytest.mark.parametrize(
    ("licenses", "expected", "decision"),
    [
        ([_license(expiry="2026-03-10")], "verified", "approve"),  # expires on the day: valid
        ([_license(expiry="2026-03-09"), _license(n=2)], "verified", "approve"),
        ([_license(expiry="2026-03-09")], "expired_or_suspended", "escalate"),
        ([_license(status="suspended")], "expired_or_suspended", "escalate"),
        ([], "missing", "awaiting_information"),
    ],
)
def test_regulated_business_licences(licenses: list, expected: str, decision: str) -> None:
    solution, run = _solve(_tables(licenses=licenses), business_type="money_services")
    assert solution.outputs["license_check"] == expected
    assert solution.outputs["kyb_decision"] == decision
    assert run.calls[2].arguments == {
        "registration_number": NUMBER,
        "license_type": "money_transmission",
    }
    requests = [c.arguments for c in run.calls if c.name == "request_missing_information"]
    assert requests == (
        [{"application_id": APP, "missing_items": ["license"]}]
        if decision == "awaiting_information"
        else []
    )


def test_missing_licence_with_a_red_flag_escalates_without_a_request() -> None:
    owners = [_owner("Rado Vaskovic", 60), _owner("Leon Ibsen", 40)]
    solution, run = _solve(_tables(owners=owners), business_type="money_services")
    assert solution.outputs["license_check"] == "missing"
    assert solution.outputs["sanctions_check"] == "potential_match"
    assert solution.outputs["kyb_decision"] == "escalate"
    assert "request_missing_information" not in _names(run)


# -- ownership, sanctions, jurisdictions -----------------------------------------------------


@pytest.mark.parametrize(
    ("owners", "expected"),
    [
        (
            [_owner("Granite Holdings Ltd", 40, kind="corporate"), _owner("Leon Ibsen", 60)],
            "complex",
        ),
        ([_owner("Amelia Abbott", 60), _owner("Leon Ibsen", 30)], "complex"),  # 90% disclosed
        (
            [_owner("Amelia Abbott", 80), _owner("Granite Holdings Ltd", 20, kind="corporate")],
            "transparent",
        ),  # a corporate owner below 25% is not a major owner
    ],
)
def test_ownership_structure(owners: list, expected: str) -> None:
    solution, _ = _solve(_tables(owners=owners))
    assert solution.outputs["ownership_check"] == expected


@pytest.mark.parametrize(
    ("owners", "legal_name", "expected"),
    [
        ([_owner("Radomir Vaskov", 100)], LEGAL, "confirmed_match"),
        ([_owner("Radek Vaskov", 100)], LEGAL, "potential_match"),  # similarity 77
        ([_owner("Amelia Abbott", 100)], "Nightjar Commodities", "confirmed_match"),
        ([_owner("Amelia Abbott", 90), _owner("Radomir Vaskov", 10)], LEGAL, "clear"),
    ],
)
def test_sanctions_screening(owners: list, legal_name: str, expected: str) -> None:
    tables = _tables(
        registry={"legal_name": legal_name}, tax={"registered_name": legal_name}, owners=owners
    )
    solution, run = _solve(tables, business_name=legal_name)
    assert solution.outputs["sanctions_check"] == expected
    screened = [c.arguments for c in run.calls if c.name == "screen_sanctions"]
    assert screened[0] == {"party_name": legal_name, "party_type": "organization"}
    assert len(screened) == 1 + sum(o["ownership_percent"] >= 25 for o in owners)


@pytest.mark.parametrize(
    ("entity", "owner_countries", "expected"),
    [
        ("XL", ["XL"], "low"),  # 39
        ("XM", ["XA"], "medium"),  # 40
        ("XJ", ["XJ"], "medium"),  # 69
        ("XA", ["XK"], "high"),  # a major owner in a 70 jurisdiction
    ],
)
def test_jurisdiction_risk_bands(entity: str, owner_countries: list, expected: str) -> None:
    owners = [_owner("Amelia Abbott", 100, country=owner_countries[0])]
    solution, run = _solve(
        _tables(registry={"jurisdiction": entity}, owners=owners), jurisdiction=entity
    )
    assert solution.outputs["jurisdiction_risk"] == expected
    rated = [c.arguments["country_code"] for c in run.calls if c.name == "get_jurisdiction_risk"]
    assert rated == list(dict.fromkeys([entity, *owner_countries]))
    assert solution.outputs["kyb_decision"] == ("escalate" if expected == "high" else "approve")


def test_minor_owner_country_is_not_rated() -> None:
    owners = [_owner("Amelia Abbott", 90), _owner("Leon Ibsen", 10, country="XK")]
    solution, run = _solve(_tables(owners=owners))
    assert _checks(solution) == CLEAN
    assert [c.arguments for c in run.calls if c.name == "get_jurisdiction_risk"] == [
        {"country_code": "XA"}
    ]


# -- tool refusals ---------------------------------------------------------------------------


def _ctx():
    return DOMAIN.context(_tables(), None)


@pytest.mark.parametrize(
    ("tool", "args", "code", "field"),
    [
        ("get_jurisdiction_risk", {"country_code": "XZ"}, "not_found", "country_code"),
        (
            "record_kyb_decision",
            {"application_id": "KYB-999999", "outcome": "approve"},
            "not_found",
            "application_id",
        ),
        (
            "request_missing_information",
            {"application_id": "KYB-999999", "missing_items": ["tax_id"]},
            "not_found",
            "application_id",
        ),
        (  # duplicate missing items
            "request_missing_information",
            {"application_id": APP, "missing_items": ["tax_id", "tax_id"]},
            "invalid_value",
            None,
        ),
    ],
)
def test_refusals(tool: str, args: dict, code: str, field: str | None) -> None:
    assert_refused(DOMAIN, _ctx(), tool, args, code, field)


def test_registry_reports_a_number_from_another_jurisdiction_as_not_found() -> None:
    result = DOMAIN.tool_map()["lookup_business_registry"](
        {"registration_number": NUMBER, "jurisdiction": "XK", "business_name": LEGAL}, _ctx()
    )
    assert result["record_found"] is False
    assert result["legal_name"] is None and result["name_similarity"] is None


def test_request_lists_items_in_sop_order_with_a_deadline() -> None:
    result = DOMAIN.tool_map()["request_missing_information"](
        {"application_id": APP, "missing_items": ["tax_id", "registration_number"]}, _ctx()
    )
    assert result["items_requested"] == ["registration_number", "tax_id"]
    assert result["respond_by"] == "2026-03-24"


# -- branch coverage of the generated tasks ---------------------------------------------------


def test_every_branch_appears_at_least_three_times() -> None:
    from tests.helpers import domain_data

    golds = list(domain_data("know_your_business").gold.values())
    branches = Counter(g.decisions["branch"] for g in golds)
    assert min(branches.values()) >= 3 and len(branches) == 3, branches
    paths: Counter[str] = Counter()
    for g in golds:
        o = g.outputs
        paths["address_from_registry"] += bool(g.decisions.get("address_from_registry"))
        paths["licence_requested"] += (
            o["license_check"] == "missing" and o["kyb_decision"] == "awaiting_information"
        )
        paths["licence_missing_but_escalated"] += (
            o["license_check"] == "missing" and o["kyb_decision"] == "escalate"
        )
        paths["approved_regulated"] += o["license_check"] == "verified" and (
            o["kyb_decision"] == "approve"
        )
        paths["approved_medium_risk"] += o["jurisdiction_risk"] == "medium" and (
            o["kyb_decision"] == "approve"
        )
    assert min(paths.values()) >= 3, paths

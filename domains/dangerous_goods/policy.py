"""The dangerous goods classification SOP as code: the reference policy behind every label."""

from __future__ import annotations

from datetime import date

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

SDS_MAX_AGE_YEARS = 5
# (lowest cumulative score, class), checked from the top down (SOP section 8).
CLASS_BANDS = [(17, "D"), (13, "C"), (9, "B"), (4, "A")]
UNDECIDED = "unable_to_decide"
SECONDARY = ("handling", "transport", "disposal")


def sds_is_current(revision_date: str, assessment_date: str) -> bool:
    """SOP §4: the sheet is current when revised on or after assessment date minus 5 years."""
    assessed = date.fromisoformat(assessment_date)
    cutoff = assessed.replace(year=assessed.year - SDS_MAX_AGE_YEARS)
    return date.fromisoformat(revision_date) >= cutoff


def same_un_number(a: str, b: str) -> bool:
    return a.replace(" ", "").upper() == b.replace(" ", "").upper()


def hazard_class_for(total: int) -> str:
    return next(code for floor, code in CLASS_BANDS if total >= floor)


def handling_gap(guideline: dict) -> str | None:
    """SOP §5: why the handling score is missing, or None when it is usable."""
    if not guideline["guideline_found"]:
        return "absent"
    if guideline["guideline_status"] != "approved":
        return "draft"
    return "unscored" if guideline["handling_severity_score"] is None else None


def transport_gap(requirement: dict) -> str | None:
    """SOP §6: why the transport score is missing, or None when it is usable."""
    if not requirement["requirement_found"]:
        return "not_listed"
    return "mode_not_assessed" if requirement["transport_severity_score"] is None else None


def disposal_gap(stream: dict) -> str | None:
    """SOP §7: why the disposal score is missing, or None when it is usable."""
    if not stream["disposal_found"]:
        return "not_listed"
    return "under_review" if stream["disposal_severity_score"] is None else None


def combine(sds: int, secondary: dict[str, int | None]) -> tuple[str, int, str]:
    """SOP §8: (data_completeness, total, imputed component) from the usable scores."""
    missing = [name for name in SECONDARY if secondary[name] is None]
    known = [sds, *(s for s in secondary.values() if s is not None)]
    if not missing:
        return "complete", sum(known), "none"
    if len(missing) == 1:
        return "imputed", sum(known) + max(known), missing[0]
    return "insufficient", 0, "none"


def _finish(run: PolicyRun, product_id: str, outputs: dict, decisions: dict) -> Solution:
    undecided = outputs["hazard_class"] == UNDECIDED
    filing = run.call(
        "file_hazard_classification",
        product_id=product_id,
        class_code="UNDETERMINED" if undecided else outputs["hazard_class"],
        cumulative_score=outputs["total_hazard_score"],
    )
    return Solution(
        outputs={**outputs, "filing_reference": filing["filing_id"]}, decisions=decisions
    )


def solve(task: Task, run: PolicyRun) -> Solution:
    x = task.inputs
    product_id = x["product_id"]
    undecided = {
        "hazard_class": UNDECIDED,
        "total_hazard_score": 0,
        "data_completeness": "insufficient",
        "imputed_component": "none",
    }

    sds = run.call("get_safety_data_sheet", product_id=product_id)
    if not sds["sds_found"]:
        outputs = {**undecided, "declaration_check": "not_checked"}
        return _finish(run, product_id, outputs, {"branch": "sds_not_found"})

    declaration = (
        "consistent"
        if same_un_number(sds["un_number"], x["declared_un_number"])
        else "un_number_mismatch"
    )
    current = sds_is_current(sds["revision_date"], x["assessment_date"])
    if not current or sds["sds_severity_score"] is None:
        outputs = {**undecided, "declaration_check": declaration}
        branch = "sds_outdated" if not current else "sds_unscored"
        return _finish(run, product_id, outputs, {"branch": branch})

    guideline = run.call("get_handling_guidelines", sds_id=sds["sds_id"])
    requirement = run.call(
        "get_transport_requirements",
        un_number=sds["un_number"],
        transport_mode=x["transport_mode"],
    )
    stream = run.call("get_disposal_guidelines", waste_stream_code=sds["waste_stream_code"])
    gaps = {
        "handling": handling_gap(guideline),
        "transport": transport_gap(requirement),
        "disposal": disposal_gap(stream),
    }
    reported = {
        "handling": guideline["handling_severity_score"],
        "transport": requirement["transport_severity_score"],
        "disposal": stream["disposal_severity_score"],
    }
    scores = {name: None if gaps[name] else reported[name] for name in SECONDARY}
    completeness, total, imputed = combine(sds["sds_severity_score"], scores)
    missing = {name: gap for name, gap in gaps.items() if gap}
    outputs = {
        "hazard_class": UNDECIDED if completeness == "insufficient" else hazard_class_for(total),
        "total_hazard_score": total,
        "data_completeness": completeness,
        "imputed_component": imputed,
        "declaration_check": declaration,
    }
    decisions = {
        "branch": f"{len(missing)}_secondary_missing",
        "sds_score": sds["sds_severity_score"],
        **{f"{name}_score": score for name, score in scores.items()},
        "missing_reasons": missing,
    }
    return _finish(run, product_id, outputs, decisions)

"""The SOP as code, for any scenario: fetch the record, screen, take the first exception
path that applies or make the offer, climb the approval chain, write the decision back."""

from __future__ import annotations

from collections.abc import Callable

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task
from sopgym.domains.banking._engine.spec import KEY, Api, Scenario
from sopgym.types import JSON


def required_level(scenario: Scenario, amount: int) -> str:
    """The lowest level whose authority covers ``amount`` (the top level covers any)."""
    for level, authority in scenario.tiers:
        if amount <= authority:
            return level
    return scenario.levels[-1]


def price(scenario: Scenario, known: JSON, amount: int) -> tuple[float, float]:
    """(rate, monthly amount) for a granted ``amount``: the base rate plus the band's
    premium; an annuity over the term, or the monthly interest when there is no term."""
    pricing = scenario.pricing
    assert pricing is not None
    rate = round(known[pricing.base_rate] + dict(pricing.premiums)[known[pricing.band]], 4)
    monthly_rate = rate / 12
    if pricing.term_field is None:
        return rate, round(amount * monthly_rate, 2)
    months = known[pricing.term_field]
    return rate, round(amount * monthly_rate / (1 - (1 + monthly_rate) ** -months), 2)


def make_policy(scenario: Scenario) -> Callable[[Task, PolicyRun], Solution]:
    def solve(task: Task, run: PolicyRun) -> Solution:
        key = task.inputs[KEY]
        known: JSON = {}

        def call(api: Api, **controls: object) -> JSON:
            arguments = {KEY: key, **controls, **{f: known[f] for f in api.inputs
                                                  if f not in controls}}  # fmt: skip
            result = run.call(api.name, **arguments)
            known.update({k: v for k, v in result.items() if k in scenario.returns(api)})
            return result

        call(scenario.fetch)
        for api in scenario.stage("screen"):
            call(api)
        failed = next((c for c in scenario.checks if c.fails(known[c.field])), None)
        if failed is not None:
            decision, amount, level, reason = "reject", 0, "none", failed.reason
            branch = f"reject:{failed.reason}"
        else:
            for api in scenario.stage("offer"):
                call(api)
            requested, limit = known[scenario.request_field], known[scenario.limit_field]
            amount = min(requested, limit)
            decision = "approve" if requested <= limit else "counter_offer"
            reason = "within_limit" if decision == "approve" else "above_limit"
            level = required_level(scenario, amount)
            for step in scenario.levels[: scenario.levels.index(level) + 1]:
                call(scenario.approval, level=step, amount=amount)
            branch = f"{decision}:{level}"
        outputs: JSON = {"decision": decision, scenario.amount_output: amount,
                         "approval_level": level}  # fmt: skip
        controls: JSON = {"status": decision, "reason_code": reason, "granted_amount": amount,
                          "level": level}  # fmt: skip
        if scenario.pricing:
            rate, monthly = price(scenario, known, amount) if decision != "reject" else (0.0, 0.0)
            outputs |= {"reason_code": reason, scenario.pricing.rate_output: rate,
                        scenario.pricing.monthly_output: monthly}  # fmt: skip
            controls |= {"rate": rate, "monthly_amount": monthly}
        call(scenario.write, **controls)
        return Solution(outputs, {"branch": branch})

    return solve


def branches(scenario: Scenario) -> list[str]:
    """Every path through the SOP, as the policy names them in ``decisions["branch"]``."""
    rejects = [f"reject:{c.reason}" for c in scenario.checks]
    offers = [f"{d}:{level}" for d in ("approve", "counter_offer") for level in scenario.levels]
    return rejects + offers

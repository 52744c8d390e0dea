"""The ledger SOP as code: look both accounts up, then transfer, hold or reject."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

REVIEW_THRESHOLD = 1000


def solve(task: Task, run: PolicyRun) -> Solution:
    payer, payee, amount = (task.inputs[k] for k in ("from_account", "to_account", "amount"))
    source = run.call("get_account", account_id=payer)
    target = run.call("get_account", account_id=payee)
    if source["status"] != "active" or target["status"] != "active":
        return Solution({"outcome": "rejected"}, {"branch": "account_not_active"})
    if amount > source["available"]:
        return Solution({"outcome": "rejected"}, {"branch": "insufficient_available_funds"})
    if amount > REVIEW_THRESHOLD:
        run.call("place_hold", account_id=payer, amount=amount)
        return Solution({"outcome": "held_for_review"}, {"branch": "above_review_threshold"})
    run.call("transfer_funds", from_account=payer, to_account=payee, amount=amount)
    return Solution({"outcome": "transferred"}, {"branch": "transfer"})

"""The CRM SOP as code: wealth clients are private; long or broad relationships priority."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task


def solve(task: Task, run: PolicyRun) -> Solution:
    record = run.call("get_account", account_id=task.inputs["account_id"])
    if record["segment"] == "wealth":
        return Solution({"service_tier": "private"}, {"branch": "wealth_segment"})
    if record["tenure_years"] >= 5:
        return Solution({"service_tier": "priority"}, {"branch": "long_tenure"})
    products = run.call("count_products", account_id=task.inputs["account_id"])
    tier = "priority" if products["product_count"] >= 3 else "standard"
    return Solution({"service_tier": tier}, {"branch": f"products_{tier}"})

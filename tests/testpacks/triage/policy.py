"""The triage SOP as code: the queue from the ticket's facts, then the hours left on its SLA."""

from __future__ import annotations

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

# queue -> service level in hours (gold customers get half on the standard queue)
QUEUES = {"urgent": 4, "standard": 24, "self_service": 72}
SELF_SERVICE_WORDS = ("password", "invoice copy")
GOLD_ESCALATION_HOURS = 24


def queue_of(inputs: dict) -> str:
    """SOP §2: an outage is urgent; a gold ticket open past a day is urgent; a routine
    request the help centre answers is self-service; anything else is standard."""
    if inputs["service_down"]:
        return "urgent"
    if inputs["customer_tier"] == "gold" and inputs["hours_open"] > GOLD_ESCALATION_HOURS:
        return "urgent"
    summary = inputs["summary"].lower()
    if any(word in summary for word in SELF_SERVICE_WORDS):
        return "self_service"
    return "standard"


def solve(task: Task, run: PolicyRun) -> Solution:
    queue = queue_of(task.inputs)
    sla = QUEUES[queue]
    if queue == "standard" and task.inputs["customer_tier"] == "gold":
        sla //= 2
    left = max(0, sla - task.inputs["hours_open"])
    return Solution({"queue": queue, "sla_hours_left": left}, {"sla_hours": sla})

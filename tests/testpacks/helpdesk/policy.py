"""The helpdesk SOP as code: ask for the order number and the email, check, decide, tell."""

from __future__ import annotations

import re

from sopgym.core.domain import PolicyRun
from sopgym.core.tasks import Solution, Task

ORDER_ID = re.compile(r"\bO-\d{5}\b")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
REFUND_WINDOW_DAYS = 30


def _fact(pattern: re.Pattern[str], text: str) -> str:
    found = pattern.search(text)
    if found is None:
        raise ValueError(f"the customer's reply {text!r} holds no {pattern.pattern}")
    return found.group(0)


def solve(task: Task, run: PolicyRun) -> Solution:
    order_id = _fact(ORDER_ID, run.ask_user("Could you tell me your order number?"))
    email = _fact(EMAIL, run.ask_user("What email address did you place the order with?"))
    order = run.call("get_order", order_id=order_id)
    if order["email"] != email:
        decision = "identity_failed"
        run.ask_user("I'm sorry, I could not verify that this order is yours, so I cannot "
                     "refund it.")
    elif order["delivered_days_ago"] <= REFUND_WINDOW_DAYS:
        decision = "refunded"
        refund = run.call("issue_refund", order_id=order_id, amount=order["amount"])
        run.ask_user(f"Your refund {refund['refund_id']} of {order['amount']} has been issued.")
    else:
        decision = "denied"
        run.ask_user(f"I'm sorry, your order was delivered {order['delivered_days_ago']} days "
                     f"ago, so it is not eligible for a refund.")
    return Solution({"decision": decision}, {"order_email_matches": order["email"] == email})

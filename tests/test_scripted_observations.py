"""The scripted model answers from what it observed, on the real services: when the tools
serve values other than those the gold was derived from, its answers follow the tools, so they
are wrong against the gold and scored as the agent's mistakes (not as infrastructure errors)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from sopgym.core.answers import MESSAGE_ACTION
from sopgym.core.dialogue import SimulatedUser
from sopgym.core.errors import ToolError
from sopgym.core.registry import domain_names
from sopgym.core.tasks import Task, ToolCall
from sopgym.services.model.conversation import MadeCall
from sopgym.services.model.observed import MAX_RETRIES
from sopgym.services.model.profiles import parse_profile
from sopgym.services.model.script import Playbook
from tests.helpers import domain_data
from tests.test_infra_faults import finish, rows, run_args
from tests.test_runs import sopgym

LIMIT = 4  # one task of each of crm's scenarios
TASKS_PER_DOMAIN = 6


@pytest.mark.slow  # a whole run on the real services (~40 s on 2 busy cores)
def test_answers_follow_tool_results_that_differ_from_the_gold(tmp_path: Path) -> None:
    data = domain_data("crm")
    served = tmp_path / "data" / data.path.relative_to(data.path.parent.parent)
    shutil.copytree(data.path, served)
    accounts = served / "tables" / "accounts.jsonl"
    records = [orjson.loads(line) for line in accounts.read_bytes().splitlines()]
    for record in records:  # the tools now say wealth where the gold saw none, and back
        record["segment"] = "retail" if record["segment"] == "wealth" else "wealth"
    accounts.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))

    args = run_args(tmp_path / "runs", "--run-id", "altered", "--limit", str(LIMIT),
                    domains=("crm",))  # fmt: skip
    args[args.index("--data-root") + 1] = str(tmp_path / "data")
    finish(sopgym(*args))
    played = rows(tmp_path / "runs" / "altered")
    assert len(played) == LIMIT
    segments = {r["account_id"]: r["segment"] for r in records}
    for row in played:
        task = next(t for t in data.tasks if t.id == row["task_id"])
        gold = data.gold[task.id].outputs["service_tier"]
        served_wealth = segments[task.inputs["account_id"]] == "wealth"
        answer = row["outputs"]["service_tier"]
        # what the served record implies, and so never the gold's tier
        assert (answer == "private") == served_wealth and answer != gold, row["task_id"]
        assert row["status"] == "finished" and not row["score"]["success"]
        assert row["score"]["errors"].get("wrong_final") == 1, row["score"]
        assert not row.get("error")


@pytest.mark.slow  # a whole run on the real services (~30 s on 2 busy cores)
def test_failed_calls_are_retried_then_given_up_as_infrastructure_errors(tmp_path: Path) -> None:
    """Over the MCP door a tool's failures reach the model itself (no client retries): it
    retries a faulted call, goes on when a retry goes through, and gives up when none does;
    such a task is an infrastructure error, never a success or an agent mistake."""
    domain_data("crm")
    faults = "get_account:503=0.5,count_products:503=1"
    args = run_args(tmp_path, "--run-id", "mcp", "--limit", "8", "--transport", "mcp",
                    "--faults", faults, "--seed", "3", domains=("crm",))  # fmt: skip
    finish(sopgym(*args))
    played = rows(tmp_path / "mcp")
    retried = [r for r in played if r["score"]["success"] and r["score"]["faults"]]
    assert retried, "some get_account call failed, was retried and went through"
    given_up = [r for r in played if r["status"] == "infra_error"]
    assert given_up, "every count_products call fails"
    for row in played:
        assert row["score"]["success"] or row["status"] == "infra_error", row["task_id"]
    for row in given_up:
        calls = row["trajectory"]["calls"]
        assert not row["score"]["success"] and row["score"]["errors"] == {}
        assert f"(given up after {1 + MAX_RETRIES} attempt(s))" in row["score"]["infra_error"]
        assert calls[-1]["error_code"] == "temporarily_unavailable"


def _observed(data, task: Task, call: ToolCall, ctx, user: SimulatedUser | None) -> MadeCall:
    """``call`` answered as the gateway would: the real tool on the episode's context, or the
    simulated user (the message action)."""
    if call.name == MESSAGE_ACTION:
        assert user is not None
        reply = user.ask(call.arguments["content"], 0)
        return MadeCall(call.name, call.arguments, True, {"reply": reply, "done": user.done})
    try:
        result = data.domain.tool_map()[call.name](dict(call.arguments), ctx)
    except ToolError as refused:
        return MadeCall(call.name, call.arguments, False, refused.to_body())
    return MadeCall(call.name, call.arguments, True, result)


@pytest.mark.parametrize("name", domain_names())
def test_the_perfect_model_reaches_the_gold_from_real_results_on_every_domain(name: str) -> None:
    """Played over what the real tools (and the simulated user) answer, the reference policy
    makes the gold calls and gives the gold answer: the perfect profile still scores 100%."""
    data = domain_data(name)
    if not data.domain.reference_policy:
        pytest.skip("no reference policy")
    book, perfect = Playbook(data, set()), parse_profile("perfect")
    for task in data.tasks[:TASKS_PER_DOMAIN]:
        gold = data.gold[task.id]
        ctx = data.domain.context(data.tables, data.files_dir, task)
        user = None
        if data.domain.user is not None and gold.user is not None:
            user = SimulatedUser(data.domain.user, gold.user, data.domain.seed, task.id,
                                 task.conversation)  # fmt: skip
        made: list[MadeCall] = []
        while (move := book.play(perfect, task, made)).call is not None:
            made.append(_observed(data, task, move.call, ctx, user))
        assert [ToolCall(c.name, c.arguments) for c in made if c.name != MESSAGE_ACTION] == (
            gold.calls
        ), task.id
        assert move.final == gold.outputs, task.id
        assert ctx.final_state() == gold.final_state, task.id

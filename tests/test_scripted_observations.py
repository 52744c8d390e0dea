"""The scripted model answers from what it observed, on the real services: when the tools
serve values other than those the gold was derived from, its answers follow the tools, so they
are wrong against the gold and scored as the agent's mistakes (not as infrastructure errors)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from tests.helpers import domain_data
from tests.test_infra_faults import finish, rows, run_args
from tests.test_runs import sopgym

LIMIT = 4  # one task of each of crm's scenarios


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

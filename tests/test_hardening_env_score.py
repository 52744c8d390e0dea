"""Hardening (issue 36, point 8): env-serve answers a finished episode's verdict only, unless
started with --score-detail: per-field correctness with unlimited resets to one task would be
a per-field answer oracle for an RL policy (against a real gateway and tool service)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sopgym.client import connect
from sopgym.env.server import COARSE_SCORE_KEYS, EnvPool
from sopgym.orchestration.stack import Stack, embedded_stack
from tests.helpers import DATA_ROOT, domain_data

DOMAIN = "patient_intake"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    logs = Path(tmp_path_factory.mktemp("env-score")) / "logs"
    with embedded_stack([DOMAIN], logs, DATA_ROOT) as running:
        yield running


@pytest.mark.parametrize("detail", [False, True])
def test_a_wrong_answer_tells_which_fields_only_when_asked(stack: Stack, detail: bool) -> None:
    pool = EnvPool(connect(stack.gateway_url), [DOMAIN], DATA_ROOT, score_detail=detail)
    task = domain_data(DOMAIN).tasks[0]
    env_id = pool.reset({"task_id": task.id})["env_id"]
    wrong = {name: "not-it" for name in domain_data(DOMAIN).gold[task.id].outputs}
    answer = pool.step({"env_id": env_id, "action": {"type": "finish", "outputs": wrong}})
    score, state = answer["info"]["score"], pool.state(env_id)["score"]
    assert score["success"] is False and state == score
    if detail:
        assert score["fields"] and not any(score["fields"].values())
    else:
        assert set(score) == set(COARSE_SCORE_KEYS)
    pool.client.close()

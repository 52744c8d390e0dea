"""Shard mode: claims for explicit and automatic shards alike, the merge's shard-count check and
progress, ``all`` as a domain list, and infrastructure errors re-run with ``--retry-infra``."""

from __future__ import annotations

from pathlib import Path

import click
import orjson
import pytest

from sopgym.cli.scaleout import domain_list
from sopgym.core.outcomes import INFRA_ERROR
from sopgym.core.registry import domain_names
from sopgym.orchestration import shards as shard_mode
from sopgym.orchestration.shards import (
    Shard,
    ShardError,
    ShardSettings,
    claim,
    claim_index,
    merge,
    run_shard,
)
from sopgym.orchestration.stack import embedded_stack
from tests.helpers import DATA_ROOT


def test_explicit_and_automatic_shards_never_take_the_same_shard(tmp_path: Path) -> None:
    claim_index(tmp_path, Shard(0, 2))  # an Indexed Job's pod 0
    taken = claim(tmp_path, 2, "compose-replica:1")
    assert taken is not None and taken.index == 1, "auto skips the shard given by index"
    assert claim(tmp_path, 2, "compose-replica:2") is None
    claim_index(tmp_path, Shard(0, 2))  # the same index restarted takes its shard back
    with pytest.raises(ShardError, match="already claimed by 'compose-replica:1'"):
        claim_index(tmp_path, Shard(1, 2))


def _meta(folder: Path, index: int, count: int, finished: bool = True) -> None:
    meta = {"domains": ["patient_intake"], "agent": "oracle", "model": "scripted",
            "count": count, "shard": index, "distractors": 0, "sop_variant": "clean",
            "limit": None, "finished_at": 1.0 if finished else None}  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"shard-{index:04d}-of-{count:04d}.json").write_bytes(orjson.dumps(meta))


def test_merge_refuses_another_shard_count_and_says_what_it_waits_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(2):
        _meta(tmp_path / "shards", index, 2, finished=index == 0)
    with pytest.raises(ShardError, match="written for 2 shard"):
        merge(tmp_path, shards=3, data_root=DATA_ROOT)
    monkeypatch.setattr(shard_mode, "PROGRESS_S", 0.0)
    monkeypatch.setattr(shard_mode, "POLL_S", 0.1)
    heard: list[str] = []
    summary = merge(tmp_path, shards=2, wait_s=0.3, data_root=DATA_ROOT, log=heard.append)
    assert summary.unfinished_shards == [1]
    assert heard and "1 of 2 shards finished" in heard[0] and "shard 1 unclaimed" in heard[0]


def test_all_is_a_domain_list_in_shard_mode_and_the_loadtest() -> None:
    assert domain_list(("all",), "--domain") == domain_names()
    assert domain_list(("patient_intake banking/loans",), "--domain") == [
        "patient_intake",
        "banking/loans",
    ]  # $SOPGYM_DOMAINS is space-separated
    with pytest.raises(click.BadParameter):
        domain_list(("no_such_domain",), "--domain")


def test_a_shards_infra_errors_are_kept_apart_and_run_again_with_retry_infra(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    with embedded_stack(["patient_intake"], tmp_path / "logs", DATA_ROOT) as stack:
        settings = ShardSettings(gateway=stack.gateway_url, domains=["patient_intake"], limit=2)
        results = run_dir / "shards" / "shard-0000-of-0001.jsonl"
        results.parent.mkdir(parents=True)
        first = settings_task_id(stack.gateway_url)
        lost = {"task_id": first, "domain": "patient_intake", "status": INFRA_ERROR,
                "error": "InfraError: gateway unreachable", "episode_id": None}  # fmt: skip
        results.write_bytes(orjson.dumps({"report": lost, "record": None}) + b"\n")
        assert run_shard(settings, "0/1", run_dir, DATA_ROOT, log=lambda _: None) == 1
        summary = merge(run_dir, data_root=DATA_ROOT, log=lambda _: None)
        assert [i["task_id"] for i in summary.infra_failed] == [first]
        assert run_shard(settings, "0/1", run_dir, DATA_ROOT, retry_infra=True) == 1
    rows = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    assert sorted(r["report"]["status"] for r in rows) == ["finished", "finished"]


def settings_task_id(gateway: str) -> str:
    from sopgym.client import GatewayClient

    client = GatewayClient(gateway)
    try:
        return str(client.tasks("patient_intake")[0]["id"])
    finally:
        client.close()

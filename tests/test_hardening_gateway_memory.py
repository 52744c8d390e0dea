"""Hardening (issue 36, point 4): the gateway keeps finished episodes' records compactly and
bounds them by bytes as well as by count, so that the default --keep-episodes fits the
manifests' memory limit; a compacted record reads back exactly as it was."""

from __future__ import annotations

from sopgym.core.trajectory import CallRecord
from sopgym.gateway.catalog import ToolRef
from sopgym.gateway.episodes import Episode, EpisodeStore


def _open(store: EpisodeStore, catalog: int = 300) -> Episode:
    routes = {f"tool_{i}": ToolRef("banking", f"tool_{i}") for i in range(catalog)}
    distractors = {f"tool_{i}" for i in range(24, catalog)}
    episode = store.open("t-1", "banking", routes, distractors, {"agent": "fc", "trial": 0})
    for i in range(12):
        call = CallRecord(f"tool_{i}", {"account_id": f"A{i:05d}"}, 200,
                          result={"balance": i * 10.5, "currency": "EUR"})  # fmt: skip
        episode.calls.append(call)
    return episode


def test_a_compacted_record_reads_back_unchanged_with_late_calls_added() -> None:
    store = EpisodeStore()
    episode = _open(store)
    episode.outputs, episode.finished_at = {"status": "ok"}, 1.0
    before = episode.record()
    store.finished(episode)
    assert episode.compacted is not None and episode.calls == [] and episode.routes == {}
    assert episode.record() == before
    assert episode.trajectory().to_json() == {k: before[k] for k in episode.trajectory().to_json()}
    late = CallRecord("tool_1", {}, 200, result={})
    episode.calls.append(late)  # answered after the finish: still in the record
    assert episode.record()["calls"][-1] == late.to_json()
    assert episode.compacted is not None
    assert len(episode.compacted) * 4 < len(str(before))  # compact, not just moved


def test_finished_records_are_bounded_by_bytes_as_well_as_count() -> None:
    store = EpisodeStore(keep=100_000, keep_bytes=64 * 1024)
    ids = []
    for _ in range(400):
        episode = _open(store)
        episode.finished_at = 1.0
        store.finished(episode)
        ids.append(episode.id)
    assert store.compact_bytes <= 64 * 1024
    assert 0 < len(store) < 400  # the oldest finished went first
    assert store.get(ids[-1]) is not None and store.get(ids[0]) is None
    open_now = _open(store)  # an open episode is never evicted for bytes
    for _ in range(50):
        done = _open(store)
        done.finished_at = 1.0
        store.finished(done)
    assert store.get(open_now.id) is open_now

"""A worker's reports wait for their spans' flush, but never long on a receiver that is down
(agents/worker.py ``TraceDelivery``)."""

from __future__ import annotations

import threading
import time

import pytest

from sopgym.agents import worker as worker_module
from sopgym.agents.worker import TraceDelivery
from sopgym.runs.records import WorkerReport


def report(task_id: str) -> WorkerReport:
    return WorkerReport(task_id=task_id, domain="d", trial=0, status="finished")


def test_reports_follow_a_flush_made_on_one_kept_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    flushed_on: list[str] = []

    def flush(timeout_ms: int = 5000) -> bool:
        flushed_on.append(threading.current_thread().name)
        return True

    monkeypatch.setattr(worker_module.tracing, "flush", flush)
    delivered: list[WorkerReport] = []
    delivery = TraceDelivery(delivered.append)
    for n in range(3):
        delivery.send(report(f"t{n}"))
        time.sleep(0.05)  # one batch each
    delivery.close()
    assert [r.task_id for r in delivered] == ["t0", "t1", "t2"]
    assert all(r.trace_flushed is True for r in delivered)
    assert len(flushed_on) == 3 and set(flushed_on) == {"trace-flush"}


def test_a_stuck_receiver_costs_one_wait_then_none_until_it_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    calls: list[float] = []

    def flush(timeout_ms: int = 5000) -> bool:
        calls.append(time.monotonic())
        return release.wait(10)

    monkeypatch.setattr(worker_module.tracing, "flush", flush)
    monkeypatch.setattr(TraceDelivery, "timeout_s", 0.2)
    delivered: list[WorkerReport] = []
    arrived = threading.Event()

    def deliver(one: WorkerReport) -> None:
        delivered.append(one)
        arrived.set()

    delivery = TraceDelivery(deliver)
    started = time.monotonic()
    delivery.send(report("stuck"))
    assert arrived.wait(5)
    assert 0.15 <= time.monotonic() - started < 2  # waited the timeout, not the receiver
    arrived.clear()
    started = time.monotonic()
    delivery.send(report("meanwhile"))  # the stuck flush still runs: none begins
    assert arrived.wait(5) and time.monotonic() - started < 0.15
    assert len(calls) == 1
    release.set()
    deadline = time.monotonic() + 5
    while delivery._flushing and time.monotonic() < deadline:
        time.sleep(0.01)
    delivery.send(report("after"))
    delivery.close()
    assert [(r.task_id, r.trace_flushed) for r in delivered] == [
        ("stuck", False), ("meanwhile", False), ("after", True)]  # fmt: skip
    assert len(calls) == 2


def test_a_flush_that_raises_leaves_the_next_free_to_try(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def flush(timeout_ms: int = 5000) -> bool:
        calls.append(timeout_ms)
        if len(calls) == 1:
            raise RuntimeError("exporter broke")
        return True

    monkeypatch.setattr(worker_module.tracing, "flush", flush)
    delivered: list[WorkerReport] = []
    delivery = TraceDelivery(delivered.append)
    delivery.send(report("first"))
    time.sleep(0.1)
    delivery.send(report("second"))
    delivery.close()
    assert [(r.task_id, r.trace_flushed) for r in delivered] == [
        ("first", False), ("second", True)]  # fmt: skip

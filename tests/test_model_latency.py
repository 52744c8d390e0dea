"""The scripted model's simulated latency (services/model/latency.py, docs/model-latency.md):
latency profiles parsed and refused by knob, the batching GPU's arithmetic to the digit under a
virtual clock (FIFO queueing above capacity, the prefix discount, TTFT + TPOT, decode slowing
as the batch fills), thousands of calls waiting on timers in one event loop, and the HTTP
server's ``GET /v1/stats`` and shutdown while calls wait; and a model name the server does not
serve refused as OpenAI refuses one, so ``sopgym run`` stops before any task (issue 46).

Nothing here reads a wall clock against a threshold: queues are observed while calls wait on a
long latency, and shutdown is proven by calls answered long before their latency ends.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import orjson
import pytest
from starlette.testclient import TestClient

from sopgym.core.exceptions import UsageError
from sopgym.core.tasks import ToolCall
from sopgym.services.model import replies
from sopgym.services.model.app import create_app
from sopgym.services.model.latency import (
    GPU,
    Job,
    LatencyProfile,
    Pacer,
    PrefixCache,
    Timing,
    job_for,
    service_seconds,
    simulate,
)
from sopgym.services.model.profiles import PRESETS, ProfileError, check_model_spec, parse_profile
from tests.helpers import DATA_ROOT, domain_data
from tests.test_explain import _refused
from tests.test_gateway_server_hostile import uvicorn_serving
from tests.test_model_server import DOMAIN, _opening, _tools


# ---- profiles ----
def test_latency_knobs_join_any_profile() -> None:
    assert parse_profile("latency=2.0").latency == LatencyProfile(latency=2.0)
    noisy = parse_profile("noisy,latency=0.5")
    assert noisy.rates == PRESETS["noisy"] and noisy.latency == LatencyProfile(latency=0.5)
    assert parse_profile("gpu").latency == GPU and parse_profile("gpu").perfect
    assert parse_profile("noisy,gpu,seed=3").latency == GPU
    # items apply left to right: a knob after the preset overrides it
    tuned = parse_profile("gpu,capacity=64,tpot=0.01").latency
    assert (tuned.capacity, tuned.tpot, tuned.ttft) == (64, 0.01, GPU.ttft)
    explicit = parse_profile("ttft=0.02,prefill=0.0001,tpot=0.005,decode_slowdown=0.01,"
                             "capacity=8,kv_cache=1000").latency  # fmt: skip
    assert explicit == LatencyProfile(0.0, 0.02, 0.0001, 0.005, 0.01, 8, 1000)
    assert not parse_profile("noisy").latency.delays


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("latency=x", "latency knob latency must be a number"),
        ("latency=-1", "latency knob latency"),
        ("tpot=inf", "latency knob tpot"),
        ("ttft=nan", "latency knob ttft"),
        ("prefill=4000", "latency knob prefill"),
        ("decode_slowdown=2", "latency knob decode_slowdown"),
        ("capacity=1.5", "latency knob capacity must be a whole number"),
        ("kv_cache=-3", "latency knob kv_cache"),
        ("gpu,latncy=1", "unknown error kind 'latncy'"),
        ("gpux", "unknown profile 'gpux'"),
    ],
)
def test_a_bad_knob_is_refused_by_name(spec: str, named: str) -> None:
    with pytest.raises(ProfileError, match=named):
        parse_profile(spec)
    # and `sopgym run --model scripted:<spec>` refuses it up front, as a usage error
    with pytest.raises(UsageError, match=named):
        check_model_spec(f"scripted:{spec}")


# ---- the arithmetic ----
def test_service_time_is_ttft_prefill_of_the_new_part_and_tpot_per_further_token() -> None:
    profile = LatencyProfile(
        latency=1.0, ttft=0.25, prefill=0.0625, tpot=0.125, decode_slowdown=0.5
    )
    # 1 + 0.25 + 0.0625 * (40 - 24) + 0.125 * (1 + 0.5 * (3 - 1)) * (5 - 1)
    assert service_seconds(profile, 40, 24, 5, 3) == 1.0 + 0.25 + 1.0 + 1.0
    assert service_seconds(profile, 40, 24, 5, 1) == 1.0 + 0.25 + 1.0 + 0.5
    assert service_seconds(profile, 10, 30, 1, 1) == 1.25  # all cached, one token: no decode
    assert service_seconds(LatencyProfile(latency=2.0), 9999, 0, 9999, 500) == 2.0


def test_calls_above_capacity_queue_first_come_first_served() -> None:
    profile = LatencyProfile(ttft=0.25, tpot=0.125, capacity=2)
    jobs = [(0.0, Job(100, 3)), (0.0, Job(100, 5)), (0.0, Job(100, 1)), (0.5, Job(100, 2))]
    timings, gpu = simulate(profile, jobs)
    assert timings == [
        Timing(0.0, 0.0, 0.5),  # 0.25 + 2 * 0.125
        Timing(0.0, 0.0, 0.75),  # 0.25 + 4 * 0.125
        Timing(0.0, 0.5, 0.75),  # queued: takes the first slot freed
        Timing(0.5, 0.75, 1.125),  # arrived as that slot was taken again: queued behind
    ]
    stats = gpu.stats(1.125, 60.0)
    assert (stats["served"], stats["queued_total"], stats["running"], stats["queued"]) == (
        4,
        2,
        0,
        0,
    )
    assert stats["queue_seconds"] == 0.75 and stats["busy_slot_seconds"] == 1.875
    assert stats["window_s"] == 1.125 and stats["utilisation"] == round(1.875 / 2.25, 6)
    assert stats["generated_tokens"] == 11 and stats["prompt_tokens"] == 400
    # the last half second: two slots busy until 0.75, then one
    recent = gpu.stats(1.125, 0.5)
    assert recent["window_busy_slot_seconds"] == 0.625 and recent["utilisation"] == 0.625


def test_utilisation_history_stays_small_at_thousands_of_calls_a_second() -> None:
    profile = LatencyProfile(latency=0.001, capacity=4)
    timings, gpu = simulate(profile, [(i / 4000, Job(1, 1)) for i in range(20_000)])
    end = timings[-1].finished
    assert len(gpu._occupancy.times) <= 1 + end / 0.1 + 1  # a checkpoint a tenth of a second
    stats = gpu.stats(end, 60.0)
    assert stats["busy_slot_seconds"] == pytest.approx(20.0)  # 20,000 x 1 ms
    assert stats["window_busy_slot_seconds"] == pytest.approx(20.0)
    assert stats["utilisation"] == pytest.approx(20.0 / (4 * end))


def test_decode_slows_as_the_batch_fills() -> None:
    profile = LatencyProfile(tpot=0.125, decode_slowdown=0.5)  # no capacity: nothing queues
    jobs = [(0.0, Job(10, 3)), (0.125, Job(10, 3)), (0.1875, Job(10, 3)), (1.0, Job(10, 3))]
    timings, gpu = simulate(profile, jobs)
    # running 1, 2, 3 at each start, then 1 again: 2 tokens of 0.125 x 1, 1.5, 2, 1
    assert [t.finished - t.started for t in timings] == [0.25, 0.375, 0.5, 0.25]
    assert gpu.stats(1.25, 60.0)["utilisation"] is None  # unbounded: no capacity to fill


def test_a_prompt_whose_prefix_was_seen_prefills_only_the_new_part() -> None:
    profile = LatencyProfile(ttft=0.5, prefill=0.0625, kv_cache=10_000)
    first = Job(32, 1, ((b"tools+system", 16), (b"user", 32)))
    second = Job(48, 1, ((b"tools+system", 16), (b"user", 32), (b"tool result", 48)))
    other = Job(48, 1, ((b"another system", 16), (b"user", 32), (b"tool result", 48)))
    timings, gpu = simulate(profile, [(0.0, first), (1.0, second), (2.0, other)])
    assert [t.finished - t.started for t in timings] == [
        0.5 + 0.0625 * 32,
        0.5 + 0.0625 * 16,  # 32 of its 48 tokens cached
        0.5 + 0.0625 * 48,  # same later pieces, another head: a chain counts from the start
    ]
    stats = gpu.stats(5.0, 60.0)
    assert (stats["prompt_tokens"], stats["cached_prompt_tokens"]) == (128, 32)


def test_the_prefix_cache_evicts_least_recently_used_tails_first() -> None:
    cache = PrefixCache(tokens=300)
    chain = ((b"a", 100), (b"b", 300), (b"c", 500))  # own tokens 100, 200, 200
    assert cache.take(chain) == 0 and cache.held == 300  # c, the tail, went out
    assert cache.take(chain) == 300  # a and b still there
    assert cache.take(((b"z", 150),)) == 0  # a newer chain pushes the oldest tail out
    assert cache.take(chain[:2]) == 100  # b went, a stayed
    assert PrefixCache(tokens=0).take(chain) == 0


def test_a_conversations_next_turn_finds_its_last_turn_and_reply_cached() -> None:
    """The job keys of turn 2 begin with turn 1's keys, its reply included, even though the
    client writes the reply back in its own spelling (content null, arguments re-serialised)."""
    data = domain_data(DOMAIN)
    messages, tools = _opening(data, data.tasks[0]), _tools(data)
    call = ToolCall("lookup_patients", {"name": "Ann", "dob": "1980-01-02"})
    reply = replies.completion("scripted", None, [call], 900)
    sent = reply["choices"][0]["message"]["tool_calls"][0]
    back = {"role": "assistant", "content": "", "tool_calls": [{**sent, "function": {
        "name": call.name, "arguments": json.dumps(call.arguments, indent=1)}}]}  # fmt: skip
    result = {"role": "tool", "tool_call_id": sent["id"], "content": '{"ok": true}'}
    turn1 = job_for({"messages": messages, "tools": tools}, reply)
    body2 = {"messages": [*messages, back, result], "tools": tools}
    raw2 = orjson.dumps(body2)
    turn2 = job_for(body2, replies.completion("scripted", "done", None, len(raw2) // 4))
    assert [key for key, _ in turn2.prefixes[: len(turn1.prefixes)]] == [
        key for key, _ in turn1.prefixes
    ]
    cache = PrefixCache(tokens=100_000)
    cache.take(turn1.prefixes)
    cached = cache.take(turn2.prefixes)
    assert 0 < cached == turn2.prefixes[len(turn1.prefixes) - 1][1] < turn2.prompt_tokens
    assert (turn1.prompt_tokens, turn1.output_tokens) == (900, reply["usage"]["completion_tokens"])


# ---- waiting on timers ----
def test_thousands_of_calls_wait_on_timers_and_stop_answers_them_all() -> None:
    profile = LatencyProfile(latency=600.0, capacity=1000)

    async def main() -> tuple[int, int, int, int]:
        pacer = Pacer()
        calls = [asyncio.create_task(pacer.pace(profile, Job(10, 2))) for _ in range(3000)]
        await asyncio.sleep(0)  # each call runs up to its wait
        gpu = pacer.gpus[profile]
        waiting = (gpu.running, len(gpu.queue))
        pacer.stop()
        await asyncio.wait_for(asyncio.gather(*calls), 30)
        return (*waiting, gpu.running, len(gpu.queue))

    assert asyncio.run(main()) == (1000, 2000, 0, 0)


def test_a_queued_call_whose_caller_leaves_gives_up_its_place() -> None:
    profile = LatencyProfile(latency=600.0, capacity=1)

    async def main() -> tuple[int, int]:
        pacer = Pacer()
        first = asyncio.create_task(pacer.pace(profile, Job(1, 1)))
        second = asyncio.create_task(pacer.pace(profile, Job(1, 1)))
        await asyncio.sleep(0)
        second.cancel()
        await asyncio.gather(second, return_exceptions=True)
        gpu = pacer.gpus[profile]
        left = (gpu.running, len(gpu.queue))
        pacer.stop()
        await first
        return left

    assert asyncio.run(main()) == (1, 0)


# ---- over HTTP ----
def _chat(url: str, model: str, results: list[Any]) -> None:
    data = domain_data(DOMAIN)
    body = {"model": model, "messages": _opening(data, data.tasks[0]), "tools": _tools(data)}
    results.append(httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120))


def test_calls_above_capacity_queue_and_shutdown_answers_them() -> None:
    """Six calls at 60 s each on two slots: /v1/stats shows two running and four queued; the
    server's shutdown then answers all six at once instead of waiting the minutes out."""
    app = create_app([DOMAIN], DATA_ROOT)
    model = "scripted:latency=60,capacity=2"
    results: list[Any] = []
    with uvicorn_serving(app, app.state.pacer.stop) as url:
        callers = [threading.Thread(target=_chat, args=(url, model, results)) for _ in range(6)]
        for caller in callers:
            caller.start()
        stats: dict[str, Any] = {}
        for _ in range(600):  # until all six are in (at most a minute on a loaded machine)
            stats = httpx.get(f"{url}/v1/stats").json()
            if stats["in_flight"] == 6 and stats["servers"][0]["queued"] == 4:
                break
            threading.Event().wait(0.1)
        gpu = stats["servers"][0]
        assert (stats["in_flight"], stats["served"], stats["queued"]) == (6, 0, 4), stats
        assert (gpu["capacity"], gpu["running"], gpu["queued"], gpu["queued_total"]) == (2, 2, 4, 4)
        assert gpu["spec"] == "latency=60,capacity=2" and gpu["knobs"]["latency"] == 60.0
    for caller in callers:
        caller.join(30)  # far less than the 60 s each call was to take
    assert [r.status_code for r in results] == [200] * 6
    assert all(r.json()["choices"][0]["message"]["tool_calls"] for r in results)


def test_small_latency_calls_all_complete_and_are_counted() -> None:
    app = create_app([DOMAIN], DATA_ROOT, profile="latency=0.05,capacity=1")
    results: list[Any] = []
    with uvicorn_serving(app, app.state.pacer.stop) as url:
        callers = [
            threading.Thread(target=_chat, args=(url, "scripted", results)) for _ in range(5)
        ]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(60)
        stats = httpx.get(f"{url}/v1/stats", params={"window": 3600}).json()
        refused = httpx.get(f"{url}/v1/stats", params={"window": "soon"})
    assert [r.status_code for r in results] == [200] * 5
    gpu = stats["servers"][0]
    assert (stats["served"], stats["in_flight"], gpu["served"], gpu["running"]) == (5, 0, 5, 0)
    assert gpu["busy_slot_seconds"] == pytest.approx(0.25)  # 5 calls x 0.05 s, one at a time
    assert gpu["generated_tokens"] == stats["generated_tokens"] > 0
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "window"


def test_every_door_waits_its_profiles_time() -> None:
    """OpenAI Chat Completions, Anthropic Messages and Bedrock Converse calls naming one
    latency profile are all held by its one simulated server."""
    model = "scripted:latency=0.01"
    client = TestClient(create_app([DOMAIN], DATA_ROOT))
    hi = [{"role": "user", "content": "hi"}]
    chat = client.post("/v1/chat/completions", json={"model": model, "messages": hi})
    anthropic = client.post("/v1/messages", json={"model": model, "max_tokens": 5, "messages": hi})
    converse = client.post(
        f"/model/{quote(model, safe='')}/converse",
        json={"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
    )
    assert [chat.status_code, anthropic.status_code, converse.status_code] == [200] * 3
    assert converse.json()["metrics"]["latencyMs"] >= 10  # the simulated time, at least
    stats = client.get("/v1/stats").json()
    assert [(g["spec"], g["served"]) for g in stats["servers"]] == [("latency=0.01", 3)]
    assert stats["servers"][0]["busy_slot_seconds"] == pytest.approx(0.03)


# ---- model names ----
def test_an_unknown_model_name_is_refused_as_openai_refuses_it() -> None:
    client = TestClient(create_app([DOMAIN], DATA_ROOT))
    body = {"messages": [{"role": "user", "content": "hi"}]}
    refused = client.post("/v1/chat/completions", json={**body, "model": "nosuchmodel"})
    assert refused.status_code == 404
    error = refused.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error", "model_not_found", "model"
    )  # fmt: skip
    assert "`nosuchmodel` does not exist" in error["message"]
    for served in ("scripted", "scripted:gpu", "scripted:noisy,latency=0", None):
        sent = body if served is None else {**body, "model": served}
        assert client.post("/v1/chat/completions", json=sent).status_code == 200, served
    bad_knob = client.post("/v1/chat/completions", json={**body, "model": "scripted:tpot=x"})
    assert bad_knob.status_code == 400 and "tpot" in bad_knob.json()["error"]["message"]
    ids = [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert {"scripted", "scripted:noisy", "scripted:gpu"} <= set(ids)
    # the other doors keep taking their clients' free-form model ids
    anthropic = {"model": "claude-x", "max_tokens": 5, **body}
    assert client.post("/v1/messages", json=anthropic).status_code == 200


def test_a_run_naming_a_model_the_scripted_server_lacks_stops_before_any_task(
    tmp_path: Path,
) -> None:
    with uvicorn_serving(create_app([DOMAIN], DATA_ROOT)) as url:
        line = _refused(tmp_path, "--agent", "fc", "--model", "openai:nosuchmodel",
                        "--base-url", f"{url}/v1")  # fmt: skip
    assert "refused model 'nosuchmodel' (HTTP 404" in line and "it serves: scripted" in line

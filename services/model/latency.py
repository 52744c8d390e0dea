"""How long the scripted model takes to answer: a fixed time per call, or a simulated batching
GPU server (vLLM-like), so load tests see the model as the slow part (docs/model-latency.md).

A call's reply is computed as it always was (in about a millisecond); only then does the call
wait, on the event loop (a timer, never a busy CPU), for the time the profile gives it:

* ``latency=S``: S seconds, whatever the call;
* the batching knobs: ``ttft`` (seconds before the first token, per call), ``prefill``
  (seconds per prompt token not already in the prefix cache), ``tpot`` (seconds per further
  output token with the batch otherwise empty), ``decode_slowdown`` (how much ``tpot`` grows
  per other sequence running at the call's start), ``capacity`` (sequences decoded at once:
  above it calls queue, first come first served) and ``kv_cache`` (prompt tokens the prefix
  cache keeps, least recently used first out).

A call holding a slot for ``s`` seconds takes::

    s = latency + ttft + prefill * (prompt_tokens - cached_tokens)
        + tpot * (1 + decode_slowdown * (running - 1)) * max(0, output_tokens - 1)

where ``running`` counts the sequences in the batch when it starts, itself included, and the
tokens are the ones the reply's ``usage`` reports (about four bytes of request JSON a token).
:func:`service_seconds` is that formula, :class:`SimulatedGPU` the slots, FIFO queue and
prefix cache of one simulated server, :func:`simulate` the same GPU driven by a virtual clock
(what the tests check to the digit), and :class:`Pacer` the same GPU driven by the event loop's.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import math
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import orjson

from sopgym.types import JSON

BYTES_PER_TOKEN = 4  # as the scripted model's usage counts a request's prompt tokens


@dataclass(frozen=True)
class LatencyProfile:
    """The knobs (seconds, except ``capacity`` and ``kv_cache``); all zero: no delay at all."""

    latency: float = 0.0
    ttft: float = 0.0
    prefill: float = 0.0
    tpot: float = 0.0
    decode_slowdown: float = 0.0
    capacity: int = 0  # 0: every call runs at once, nothing queues
    kv_cache: int = 0  # 0: no prefix cache

    @property
    def delays(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))

    def spec(self) -> str:
        """The knobs that differ from zero, as a profile spec writes them."""
        return ",".join(
            f"{f.name}={getattr(self, f.name):g}" for f in fields(self) if getattr(self, f.name)
        )

    def knobs(self) -> dict[str, float | int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# vLLM serving Llama-3.1-8B (BF16) on one H100 80GB; where each figure comes from is in
# docs/model-latency.md
GPU = LatencyProfile(
    ttft=0.015,
    prefill=0.00004,
    tpot=0.0065,
    decode_slowdown=0.008,
    capacity=256,
    kv_cache=400_000,
)
LATENCY_PRESETS: dict[str, LatencyProfile] = {"gpu": GPU}
INT_KNOBS = ("capacity", "kv_cache")
FLOAT_KNOBS = tuple(f.name for f in fields(LatencyProfile) if f.name not in INT_KNOBS)
KNOBS = (*FLOAT_KNOBS, *INT_KNOBS)


def service_seconds(
    profile: LatencyProfile, prompt_tokens: int, cached_tokens: int, output_tokens: int,
    running: int,
) -> float:  # fmt: skip
    """Seconds a call holds its slot: the formula in this module's docstring."""
    new_tokens = max(0, prompt_tokens - cached_tokens)
    per_token = profile.tpot * (1 + profile.decode_slowdown * max(0, running - 1))
    return (
        profile.latency
        + profile.ttft
        + profile.prefill * new_tokens
        + per_token * max(0, output_tokens - 1)
    )


# ---- what a call brings: its size and its conversation's prefixes ----
@dataclass(frozen=True)
class Job:
    """One call as the GPU sees it: ``prefixes`` are the running keys of its conversation
    (tools, then each message; then the reply) with the prompt tokens up to each."""

    prompt_tokens: int
    output_tokens: int
    prefixes: tuple[tuple[bytes, int], ...] = ()


def job_for(body: JSON, reply: JSON) -> Job:
    """The job of a Chat Completions ``body`` whose ``reply`` the engine wrote, sized by the
    reply's ``usage``: the reply's own message is the last prefix, so the conversation's next
    turn finds it cached, as a server that keeps the generated tokens' KV finds them."""
    usage = reply.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    output_tokens = int(usage.get("completion_tokens") or 0)
    pieces: list[Any] = [{"tools": body.get("tools") or []}]
    pieces += body.get("messages") or []
    choices = reply.get("choices") or []
    if choices and isinstance(choices[0], dict):
        pieces.append(choices[0].get("message") or {})
    prefixes, digest, size = [], b"", 0
    for piece in pieces:
        text = orjson.dumps(_normal(piece), option=orjson.OPT_SORT_KEYS)
        digest = hashlib.blake2b(digest + text, digest_size=16).digest()
        size += len(text)
        prefixes.append((digest, min(prompt_tokens, size // BYTES_PER_TOKEN)))
    return Job(prompt_tokens, output_tokens, tuple(prefixes))


def _normal(piece: Any) -> Any:
    """A message as its meaning, not its spelling: clients write back an assistant's turn with
    ``content`` null or empty and a tool call's arguments re-serialised, and a real server's
    cache holds tokens, which those differences do not change."""
    if not isinstance(piece, dict) or "role" not in piece:
        return piece
    content = piece.get("content")
    if isinstance(content, list):
        content = "".join(
            p.get("text", "") if isinstance(p, dict) else str(p) for p in content
        )  # fmt: skip
    calls = []
    for call in piece.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append([function.get("name"), _arguments(function.get("arguments"))])
    return [piece.get("role"), content or "", calls, piece.get("tool_call_id") or ""]


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


class PrefixCache:
    """Conversation prefixes a server has computed, up to ``tokens`` prompt tokens in all,
    least recently used out first; a prefix counts only if every shorter one of its chain is
    there too (as vLLM's block hashes chain). The longest cached prefix of a call is prefilled
    for free."""

    def __init__(self, tokens: int) -> None:
        self.capacity = tokens
        self.held = 0
        self._entries: OrderedDict[bytes, int] = OrderedDict()  # key → its own new tokens

    def take(self, prefixes: Sequence[tuple[bytes, int]]) -> int:
        """The prompt tokens of ``prefixes`` already cached; then all of them are cached."""
        if self.capacity <= 0:
            return 0
        cached = 0
        for key, upto in prefixes:
            if key not in self._entries:
                break
            cached = upto
        before = 0
        for key, upto in prefixes:
            if key not in self._entries:
                own = max(1, upto - before)  # at least one: entries stay bounded by tokens
                self._entries[key] = own
                self.held += own
            before = upto
        # the chain's head is used most recently, so its tail is evicted first
        for key, _ in reversed(prefixes):
            self._entries.move_to_end(key)
        while self.held > self.capacity and self._entries:
            _, tokens = self._entries.popitem(last=False)
            self.held -= tokens
        return cached


# ---- one simulated server: slots, its FIFO queue, its figures ----
@dataclass
class Figures:
    served: int = 0
    queued_total: int = 0  # calls that had to wait for a slot
    queue_seconds: float = 0.0  # their waits, summed
    busy_slot_seconds: float = 0.0  # slot-seconds of calls finished
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0


class _Occupancy:
    """Slot-seconds over time: the exact running integral of the sequences running, with
    checkpoints (time, integral) at most every ``RESOLUTION`` seconds kept for ``keep``
    seconds, so memory stays small at thousands of calls a second. Where a window starts
    between two checkpoints the integral is interpolated: off by at most the slots that
    changed in that tenth of a second, times a tenth of a second."""

    RESOLUTION = 0.1

    def __init__(self, now: float) -> None:
        self.last, self.running, self.total = now, 0, 0.0
        self.times: deque[float] = deque([now])
        self.areas: deque[float] = deque([0.0])

    def change(self, now: float, running: int, keep: float) -> None:
        self.total += self.running * (now - self.last)
        self.last, self.running = now, running
        if now - self.times[-1] >= self.RESOLUTION:
            self.times.append(now)
            self.areas.append(self.total)
            while len(self.times) > 1 and self.times[1] <= now - keep:
                self.times.popleft()
                self.areas.popleft()

    def area(self, at: float) -> float:
        """Slot-seconds from the start up to ``at``."""
        if at >= self.last:
            return self.total + self.running * (at - self.last)
        i = bisect.bisect_right(self.times, at) - 1
        if i < 0:
            return self.areas[0]
        start, area = self.times[i], self.areas[i]
        end, upto = (
            (self.times[i + 1], self.areas[i + 1]) if i + 1 < len(self.times)
            else (self.last, self.total)
        )  # fmt: skip
        return area if end <= start else area + (upto - area) * (at - start) / (end - start)


class SimulatedGPU:
    """The slots, queue and prefix cache of one simulated server, with no clock of its own:
    every method is told ``now``, so the same arithmetic runs under the event loop
    (:class:`Pacer`) and under a virtual clock (:func:`simulate`)."""

    KEEP = 3600.0  # seconds of occupancy history kept for windowed utilisation

    def __init__(self, profile: LatencyProfile, now: float = 0.0) -> None:
        self.profile = profile
        self.started = now
        self.running = 0
        # waiting jobs, each with its arrival and the caller's ticket (what wakes it)
        self.queue: deque[tuple[Job, float, Any]] = deque()
        self.cache = PrefixCache(profile.kv_cache)
        self.figures = Figures()
        self._occupancy = _Occupancy(now)

    def admit(self, job: Job, now: float, ticket: Any = None) -> bool:
        """A job arrives: True when a slot is free (call :meth:`begin`), else it queues with
        ``ticket``, which :meth:`finish` hands back when the job's turn comes."""
        if self.profile.capacity and self.running >= self.profile.capacity:
            self.queue.append((job, now, ticket))
            self.figures.queued_total += 1
            return False
        self._set_running(self.running + 1, now)
        return True

    def begin(self, job: Job, now: float, arrived: float | None = None) -> float:
        """A job holding a slot starts: the seconds it will hold it."""
        cached = self.cache.take(job.prefixes)
        seconds = service_seconds(
            self.profile, job.prompt_tokens, cached, job.output_tokens, self.running
        )
        figures = self.figures
        if arrived is not None:
            figures.queue_seconds += now - arrived
        figures.prompt_tokens += job.prompt_tokens
        figures.cached_tokens += min(cached, job.prompt_tokens)
        figures.generated_tokens += job.output_tokens
        return seconds

    def finish(self, seconds: float, now: float) -> tuple[Job, float, Any] | None:
        """A job that held its slot ``seconds`` is done: the queued job (with its arrival and
        ticket) that takes the slot over, or None (the slot is free)."""
        self.figures.served += 1
        self.figures.busy_slot_seconds += seconds
        if self.queue:
            return self.queue.popleft()
        self._set_running(self.running - 1, now)
        return None

    def withdraw(self, ticket: Any) -> bool:
        """The job queued with ``ticket`` leaves before its turn; False if it was not queued
        (its turn had come)."""
        for index, entry in enumerate(self.queue):
            if entry[2] is ticket:
                del self.queue[index]
                return True
        return False

    def _set_running(self, running: int, now: float) -> None:
        self.running = running
        self._occupancy.change(now, running, self.KEEP)

    def stats(self, now: float, window: float) -> JSON:
        """The figures ``GET /v1/stats`` shows for this server (docs/model-latency.md)."""
        span = max(0.0, min(window, now - self.started))
        busy = self._occupancy.area(now) - self._occupancy.area(now - span) if span else 0.0
        capacity = self.profile.capacity
        figures = self.figures
        return {
            "spec": self.profile.spec(),
            "knobs": self.profile.knobs(),
            "capacity": capacity or None,
            "running": self.running,
            "queued": len(self.queue),
            "served": figures.served,
            "queued_total": figures.queued_total,
            "queue_seconds": round(figures.queue_seconds, 6),
            "busy_slot_seconds": round(figures.busy_slot_seconds, 6),
            "window_s": round(span, 6),
            "window_busy_slot_seconds": round(busy, 6),
            "mean_running": round(busy / span, 6) if span else 0.0,
            "utilisation": round(busy / (capacity * span), 6) if capacity and span else None,
            "prompt_tokens": figures.prompt_tokens,
            "cached_prompt_tokens": figures.cached_tokens,
            "generated_tokens": figures.generated_tokens,
            "prefix_cache_tokens": self.cache.held,
        }


# ---- the same GPU under a virtual clock ----
@dataclass(frozen=True)
class Timing:
    arrived: float
    started: float
    finished: float

    @property
    def waited(self) -> float:
        return self.started - self.arrived


def simulate(
    profile: LatencyProfile, arrivals: Iterable[tuple[float, Job]]
) -> tuple[list[Timing], SimulatedGPU]:
    """Each job's arrival, start and finish when ``arrivals`` (time, job) reach one simulated
    server, and the server afterwards. A slot freed at the instant a job arrives goes to the
    queue first (first come, first served)."""
    jobs = sorted(enumerate(arrivals), key=lambda item: (item[1][0], item[0]))
    gpu = SimulatedGPU(profile)
    started: dict[int, tuple[float, float]] = {}  # job index → (start, seconds)
    timings: dict[int, Timing] = {}
    arrived_at = {i: t for i, (t, _) in jobs}
    pending: list[tuple[float, int, int]] = []  # (finish time, 0 = finish, job index)

    def start(i: int, job: Job, now: float) -> None:
        seconds = gpu.begin(job, now, arrived_at[i])
        started[i] = (now, seconds)
        bisect.insort(pending, (now + seconds, 0, i))

    def finish_until(limit: float) -> None:
        while pending and pending[0][0] <= limit:
            now, _, i = pending.pop(0)
            begun, seconds = started[i]
            timings[i] = Timing(arrived_at[i], begun, now)
            handed = gpu.finish(seconds, now)
            if handed is not None:
                job, _, ticket = handed
                start(ticket, job, now)

    for i, (now, job) in jobs:
        finish_until(now)
        if gpu.admit(job, now, i):
            start(i, job, now)
    finish_until(math.inf)
    return [timings[i] for i in sorted(timings)], gpu


# ---- the same GPU under the event loop ----
class Pacer:
    """Holds each call of a delaying profile for its simulated time on a timer (no CPU spent
    waiting), one :class:`SimulatedGPU` per distinct profile; :meth:`stop` answers every
    waiting call at once (the server is shutting down)."""

    def __init__(self) -> None:
        self.gpus: dict[LatencyProfile, SimulatedGPU] = {}
        self._waiting: set[asyncio.Future[None]] = set()
        self.stopping = False

    async def pace(self, profile: LatencyProfile, job: Job) -> None:
        if not profile.delays or self.stopping:
            return
        loop = asyncio.get_running_loop()
        gpu = self.gpus.get(profile)
        if gpu is None:
            gpu = self.gpus[profile] = SimulatedGPU(profile, loop.time())
        arrived = loop.time()
        turn: asyncio.Future[None] = loop.create_future()
        if not gpu.admit(job, arrived, turn):
            try:
                await turn
            except asyncio.CancelledError:
                if not gpu.withdraw(turn):
                    self._release(gpu, 0.0)  # the slot was handed over: hand it on
                raise
            if self.stopping:  # woken by stop(), or its turn came as the server stops
                if not gpu.withdraw(turn):
                    self._release(gpu, 0.0)
                return
        seconds = gpu.begin(job, loop.time(), arrived)
        try:
            await self._sleep(loop, seconds)
        finally:
            self._release(gpu, seconds)

    def _release(self, gpu: SimulatedGPU, seconds: float) -> None:
        """The slot goes to the next queued call, if any."""
        handed = gpu.finish(seconds, asyncio.get_running_loop().time())
        if handed is not None:
            _wake(handed[2])

    async def _sleep(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        done: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(seconds, _wake, done)
        self._waiting.add(done)
        try:
            await done
        finally:
            timer.cancel()
            self._waiting.discard(done)

    def stop(self) -> None:
        """Answer every waiting and queued call now, and delay no call from here on."""
        self.stopping = True
        queued = [ticket for gpu in self.gpus.values() for _, _, ticket in gpu.queue]
        for future in [*self._waiting, *queued]:
            _wake(future)

    def stats(self, window: float) -> list[JSON]:
        now = asyncio.get_running_loop().time()
        return [gpu.stats(now, window) for gpu in self.gpus.values()]


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

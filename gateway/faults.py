"""Fault injection at the gateway: added latency and transient failures, per run and per tool.

A spec is a comma-separated list of ``[TOOL:]KEY=VALUE`` items. Keys:

- ``latency``: added before the call goes out; ``50ms`` (constant), ``exp:50ms`` (exponential
  with that mean) or ``uniform:10ms..200ms``; units ``ms`` or ``s``.
- ``429``, ``503``, ``timeout``, ``drop``: the probability (0..1) that a call is answered
  ``rate_limited`` (429), ``temporarily_unavailable`` (503), ``upstream_timeout`` (504, after
  holding the call for :data:`TIMEOUT_HOLD_S`) or has its connection dropped with no answer.
  Together they are at most 1.

An item with a ``TOOL:`` prefix applies to that tool only and overrides the run-wide item of
the same key for it: ``503=0.05,lookup_patient:drop=0.3``.

Every draw is a pure function of (run seed, task, trial, call index, tool), never of timing
or of which episodes run beside it, so a seed replays the same faults on every run. The
faulted call is recorded in the episode (its code among :data:`~sopgym.core.errors.FAULT_CODES`)
and left out of the agent's scores; the agent's client retries it within its budget.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass, field

from sopgym.core.errors import ToolError
from sopgym.core.exceptions import UsageError

TIMEOUT_HOLD_S = 1.0

# spec key -> the error code the faulted call is answered (and recorded) with
FAULT_KEYS = {
    "429": "rate_limited",
    "503": "temporarily_unavailable",
    "timeout": "upstream_timeout",
    "drop": "connection_dropped",
}
DROP = "connection_dropped"

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s)")
_TOOL = re.compile(r"[A-Za-z_][\w.-]*")


class FaultSpecError(UsageError, ValueError):
    """A fault spec that does not parse; the message says which item and why."""


@dataclass(frozen=True)
class Latency:
    kind: str  # const, exp or uniform
    low: float  # seconds: the constant, the mean, or the lower bound
    high: float = 0.0  # uniform's upper bound

    def draw(self, rng: random.Random) -> float:
        if self.kind == "exp":
            return rng.expovariate(1.0 / self.low) if self.low > 0 else 0.0
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high)
        return self.low


@dataclass(frozen=True)
class FaultRule:
    latency: Latency | None = None
    rates: dict[str, float] = field(default_factory=dict)  # FAULT_KEYS key -> probability


@dataclass(frozen=True)
class Draw:
    delay: float  # seconds of added latency
    code: str | None  # the fault's error code, or None: the call goes through

    def error(self) -> ToolError:
        assert self.code is not None
        return ToolError(self.code, f"injected fault: {self.code}")


@dataclass(frozen=True)
class FaultPlan:
    spec: str
    default: FaultRule
    tools: dict[str, FaultRule]

    def rule(self, tool: str) -> FaultRule:
        """The run-wide rule with ``tool``'s own items laid over it."""
        own = self.tools.get(tool)
        if own is None:
            return self.default
        return FaultRule(own.latency or self.default.latency, {**self.default.rates, **own.rates})

    def draw(self, seed: int, task_id: str, trial: int, call_index: int, tool: str) -> Draw:
        key = f"{seed}|{task_id}|{trial}|{call_index}|{tool}".encode()
        rng = random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big"))
        rule = self.rule(tool)
        delay = rule.latency.draw(rng) if rule.latency else 0.0
        roll, cumulative = rng.random(), 0.0
        for name, code in FAULT_KEYS.items():
            cumulative += rule.rates.get(name, 0.0)
            if roll < cumulative:
                return Draw(delay, code)
        return Draw(delay, None)


def parse_faults(spec: str) -> FaultPlan:
    """A :class:`FaultPlan` from its spec; :class:`FaultSpecError` naming the bad item."""
    default: dict[str, object] = {}
    tools: dict[str, dict[str, object]] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        target, eq, value = item.partition("=")
        if not eq:
            raise FaultSpecError(f"fault item {item!r}: expected KEY=VALUE")
        tool, colon, key = target.strip().rpartition(":")
        if colon and not _TOOL.fullmatch(tool):
            raise FaultSpecError(f"fault item {item!r}: {tool!r} is not a tool name")
        into = tools.setdefault(tool, {}) if colon else default
        into[key] = _value(item, key, value.strip())
    for rule in (default, *tools.values()):
        total = sum(v for k, v in rule.items() if k != "latency")  # type: ignore[misc]
        if total > 1.0:
            raise FaultSpecError(f"fault rates add up to {total:g} (at most 1): {spec!r}")
    return FaultPlan(spec, _rule(default), {t: _rule(r) for t, r in tools.items()})


def _rule(items: dict[str, object]) -> FaultRule:
    latency = items.pop("latency", None)
    return FaultRule(latency, items)  # type: ignore[arg-type]


def _value(item: str, key: str, value: str) -> object:
    if key == "latency":
        return _latency(item, value)
    if key not in FAULT_KEYS:
        known = ", ".join(["latency", *FAULT_KEYS])
        raise FaultSpecError(f"fault item {item!r}: unknown key {key!r} (known: {known})")
    try:
        rate = float(value)
    except ValueError:
        rate = math.nan
    if not 0.0 <= rate <= 1.0:  # nan fails too
        raise FaultSpecError(f"fault item {item!r}: a rate is a number from 0 to 1")
    return rate


def _latency(item: str, value: str) -> Latency:
    kind, colon, rest = value.partition(":")
    if not colon:
        kind, rest = "const", value
    if kind == "uniform":
        low, dots, high = rest.partition("..")
        if dots:
            bounds = (_seconds(item, low), _seconds(item, high))
            if bounds[0] > bounds[1]:
                raise FaultSpecError(f"fault item {item!r}: uniform bounds in the wrong order")
            return Latency("uniform", *bounds)
        raise FaultSpecError(f"fault item {item!r}: uniform latency is uniform:LOW..HIGH")
    if kind not in ("const", "exp"):
        raise FaultSpecError(f"fault item {item!r}: latency is 50ms, exp:50ms or uniform:A..B")
    return Latency(kind, _seconds(item, rest))


def _seconds(item: str, text: str) -> float:
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise FaultSpecError(f"fault item {item!r}: {text!r} is not a duration like 50ms or 1.5s")
    number = float(match.group(1))
    return number / 1000 if match.group(2) == "ms" else number

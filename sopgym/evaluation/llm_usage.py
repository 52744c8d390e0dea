"""The LLM side of a run: calls, tokens, latency and throughput, overall, per domain and per
agent, and a cost estimate when a price table is given (``sopgym run --prices prices.json``).

Every figure comes from the usage records the agents write for each model call
(``results.jsonl`` rows' ``llm_calls``: model, input/output tokens, latency, error). Failed
calls are counted (``errors``) and their time is in the latency figures, but they carry no
tokens. A price table maps a model label (as the records name it: ``openai:gpt-4o-mini``,
``anthropic:...``, or ``*`` for any other) to US dollars per million input and output tokens::

    {"openai:gpt-4o-mini": {"input": 0.15, "output": 0.6}, "*": {"input": 1, "output": 2}}

A model the table does not price makes the cost ``None`` (unknown), never 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson

from sopgym.core.exceptions import UsageError
from sopgym.evaluation.stats import percentiles
from sopgym.types import JSON

PER_MILLION = 1_000_000


class PriceTableError(UsageError, ValueError):
    """A price table that cannot be used, with the reason."""


def read_prices(path: Path) -> JSON:
    """A price table file, checked: {model: {"input": USD/Mtok, "output": USD/Mtok}}."""
    try:
        table = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise PriceTableError(f"{path}: {error}") from None
    if not isinstance(table, dict):
        raise PriceTableError(f"{path}: a JSON object of model -> prices")
    for model, price in table.items():
        if not (
            isinstance(price, dict)
            and all(
                isinstance(price.get(k), int | float)
                and not isinstance(price.get(k), bool)
                and price[k] >= 0
                for k in ("input", "output")
            )
        ):
            raise PriceTableError(
                f"{path}: {model!r} needs non-negative numbers 'input' and 'output' (USD per "
                "million tokens)"
            )
    return table


def llm_figures(rows: Iterable[JSON], agent: str, prices: JSON | None = None) -> JSON:
    """``{"all": {...}, "domains": {name: {...}}, "agents": {agent: {...}}}`` over the rows'
    model calls (a run has one agent; the key lets runs be compared side by side)."""
    rows = list(rows)
    by_domain: dict[str, list[JSON]] = {}
    for row in rows:
        by_domain.setdefault(str(row.get("domain")), []).extend(row.get("llm_calls") or ())
    every = [call for calls in by_domain.values() for call in calls]
    overall = figures(every, prices)
    return {
        "all": overall,
        "domains": {name: figures(calls, prices) for name, calls in sorted(by_domain.items())},
        "agents": {agent: overall},
    }


def figures(calls: list[JSON], prices: JSON | None = None) -> JSON:
    latencies = [float(c.get("latency_s") or 0.0) for c in calls]
    spread = percentiles(latencies)
    tokens_in = sum(int(c.get("input_tokens") or 0) for c in calls)
    tokens_out = sum(int(c.get("output_tokens") or 0) for c in calls)
    answered = [c for c in calls if not c.get("error")]
    answered_s = sum(float(c.get("latency_s") or 0.0) for c in answered)
    return {
        "calls": len(calls),
        "errors": len(calls) - len(answered),
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "latency_s_total": round(sum(latencies), 3),
        "latency_p50_s": spread["p50"],
        "latency_p95_s": spread["p95"],
        # output tokens over answered calls' whole latency (prompt processing, queueing and
        # transport included): not the model's generation speed, which is the next figure
        "output_tokens_per_s_of_latency": round(tokens_out / answered_s, 2)
        if answered_s > 0
        else None,
        "generation_tokens_per_s": generation_speed(answered),
        "prompt_tokens_per_s": prompt_speed(answered),
        "cost_usd": cost(calls, prices) if prices is not None else None,
    }


def generation_speed(calls: list[JSON]) -> float | None:
    """Tokens generated per second of generation, as the server timed it (llama-server's
    ``timings``, or a ``usage.completion_time``; recorded per call as ``generated_tokens``
    and ``generation_s``); None when no call carries the server's timing."""
    timed = [c for c in calls if c.get("generation_s")]
    seconds = sum(float(c["generation_s"]) for c in timed)
    tokens = sum(int(c.get("generated_tokens") or 0) for c in timed)
    return round(tokens / seconds, 2) if seconds > 0 else None


def prompt_speed(calls: list[JSON]) -> float | None:
    """Prompt tokens processed per second, as the server timed it (tokens it read from its
    prompt cache are not processed, so they count in neither)."""
    timed = [c for c in calls if c.get("prompt_s")]
    seconds = sum(float(c["prompt_s"]) for c in timed)
    tokens = sum(int(c.get("prompt_tokens_processed") or 0) for c in timed)
    return round(tokens / seconds, 2) if seconds > 0 else None


def cost(calls: list[JSON], prices: JSON) -> float | None:
    total = 0.0
    for call in calls:
        price = prices.get(str(call.get("model"))) or prices.get("*")
        if price is None:
            return None
        total += (
            int(call.get("input_tokens") or 0) * price["input"]
            + int(call.get("output_tokens") or 0) * price["output"]
        ) / PER_MILLION
    return round(total, 6)

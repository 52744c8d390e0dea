"""What recording token-level trajectories costs per model turn (docs/tokens.md).

Reads a run recorded with ``--record-tokens`` (its ``tokens.jsonl``) for the turns' real sizes,
then times, per turn and in this process only:

* the client's share: parsing the reply's extra fields (:func:`with_token_ids`) and building
  the turn's record (:func:`turn_tokens`), against parsing the same reply without them;
* the bytes a turn adds: on the wire (the reply's token fields) and in ``tokens.jsonl``.

Usage: ``python bench/bench_tokens.py RUN_DIR`` (e.g. after
``sopgym run patient_intake --agent fc --model scripted --limit 10 --workers 1 --record-tokens
--runs-dir /tmp/tokbench --run-id on``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
from langchain_core.messages import AIMessage

from sopgym.agents.llm import turn_tokens
from sopgym.agents.models import with_token_ids


def reply_for(turn: dict[str, Any], with_tokens: bool) -> bytes:
    """A vLLM-shaped reply of the turn's sizes (its text stands in at 4 bytes a token)."""
    completion = turn["completion_token_ids"]
    choice: dict[str, Any] = {
        "index": 0,
        "finish_reason": "stop",
        "message": {"role": "assistant", "content": "x" * 4 * len(completion)},
        "logprobs": None,
    }
    body: dict[str, Any] = {"id": "c", "object": "chat.completion", "model": "m",
                            "choices": [choice], "usage": {"prompt_tokens": 1}}  # fmt: skip
    if with_tokens:
        body["prompt_token_ids"] = turn["prompt_token_ids"]
        choice["token_ids"] = completion
        choice["logprobs"] = {
            "content": [
                {"token": f"token_id:{i}", "logprob": lp, "bytes": [], "top_logprobs": []}
                for i, lp in zip(completion, turn["completion_logprobs"], strict=True)
            ]
        }
    return orjson.dumps(body)


def client_seconds(raw: bytes, record: bool, repeats: int) -> float:
    started = time.process_time()
    for _ in range(repeats):
        body = with_token_ids(orjson.loads(raw))
        if record:
            usage, choice = body["usage"], body["choices"][0]
            message = AIMessage("", response_metadata={"token_usage": usage,
                                                       "logprobs": choice["logprobs"]})  # fmt: skip
            turn_tokens(message, [])
    return (time.process_time() - started) / repeats


def main(run_dir: Path, repeats: int = 50) -> None:
    lines = (run_dir / "tokens.jsonl").read_bytes().splitlines()
    turns = [orjson.loads(line) for line in lines]
    extra_cpu = extra_wire = 0.0
    for turn in turns:
        plain, full = reply_for(turn, False), reply_for(turn, True)
        extra_cpu += client_seconds(full, True, repeats) - client_seconds(plain, False, repeats)
        extra_wire += len(full) - len(plain)
    n = len(turns)
    prompt = sum(len(t["prompt_token_ids"]) for t in turns) / n
    completion = sum(len(t["completion_token_ids"]) for t in turns) / n
    print(f"turns: {n}; mean prompt {prompt:.0f} tokens, mean completion {completion:.0f}")
    print(f"client CPU per turn: +{extra_cpu / n * 1e3:.3f} ms")
    print(f"reply bytes per turn: +{extra_wire / n:,.0f}")
    print(f"tokens.jsonl bytes per turn: {sum(len(line) + 1 for line in lines) / n:,.0f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

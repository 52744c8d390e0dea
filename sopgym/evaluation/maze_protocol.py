"""SOP-Maze's own protocol: how its published evaluation sends an item and reads the reply.

Sending: the record's ``input`` as-is, the one user message, with no system prompt and no
wrapping (``sopgym run --protocol paper``; :func:`paper_prompt`). Reading
(:func:`parse_reply`): as the official scorer does, the reply is repaired by the ``json-repair``
package (code fences, single quotes, trailing commas, a truncated end, prose around the JSON)
and the first complete object it yields is the answer. The answer is then scored like any
other (``answer_schema``: draft-07 validation, then the target's keys compared).

This module is the one reader of SOP-Maze replies: the agents use it under the paper protocol,
and ``sopgym score`` reads every ``sopmaze/*`` text answer with it (the published
``model_response`` files, :mod:`sopgym.evaluation.maze_responses`, and our own JSONL).
"""

from __future__ import annotations

from typing import Any

import json_repair

from sopgym.types import JSON

PROTOCOLS = ("default", "paper")


def parse_reply(text: str) -> JSON | None:
    """The answer object in a model's reply, read as leniently as the official scorer reads
    it: the repaired JSON, or its first object when it holds several (or a list of them);
    ``None`` when there is no object at all."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        found: Any = json_repair.loads(text)
    except (ValueError, RecursionError):  # the repairer gave up: no object to read
        return None
    if isinstance(found, list):
        found = next((item for item in found if isinstance(item, dict)), None)
    return found if isinstance(found, dict) else None


def paper_prompt(inputs: JSON) -> str | None:
    """What the paper protocol sends for a task: its ``prompt`` input, as published (``None``:
    the task is not a SOP-Maze-style prompt item, so our own protocol applies)."""
    prompt = inputs.get("prompt")
    return prompt if isinstance(prompt, str) and prompt.strip() and len(inputs) == 1 else None

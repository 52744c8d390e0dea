"""SOP-Maze's own protocol: how its published evaluation sends an item and reads the reply.

Sending: the record's ``input`` as-is, the one user message, with no system prompt and no
wrapping (``sopgym run --protocol paper``; :func:`paper_prompt`). Reading, two ways:

- :func:`parse_reply`, our answer: the reply repaired by the ``json-repair`` package, as the
  official scorer repairs it (code fences, single quotes, trailing commas, a truncated end,
  prose around the JSON), and the first complete object it yields is the answer, scored like
  any other (``answer_schema``: schema validation, then the target's keys compared);
- :func:`official_reading`, the official grade's (``answer_official``): the repaired value
  exactly as the official scorer takes it, validated whole. The two differ where the reply
  holds several objects (a list: we take its first object, the official scorer validates the
  list and grades 0) or no object at all.

This module is the one reader of SOP-Maze replies: the agents use it under the paper protocol,
and ``sopgym score`` reads every ``sopmaze/*`` text answer with it (the published
``model_response`` files, :mod:`sopgym.evaluation.maze_responses`, and our own JSONL).
"""

from __future__ import annotations

from typing import Any, Final

import json_repair

from sopgym.types import JSON

PROTOCOLS = ("default", "paper")


class _NoReading:
    """What the official scorer's reading of a reply raised on (it grades such a reply 0)."""

    def __repr__(self) -> str:
        return "NO_READING"


NO_READING: Final = _NoReading()


def official_reading(text: str) -> Any:
    """A reply read exactly as SOP-Maze's published scorer reads it before validating it: the
    text mended by ``json-repair``'s ``repair_json`` (``ensure_ascii=False``), then that JSON
    text decoded by ``json_repair.loads``. The value is whatever that yields, an object or not:
    a list where the reply holds several objects, ``""`` where it holds no JSON at all; and
    :data:`NO_READING` where the reading raised (the official scorer grades that 0).

    Unlike :func:`parse_reply`, nothing is picked out of the value: the official grade validates
    it whole against the item's schema."""
    try:
        return json_repair.loads(json_repair.repair_json(text, ensure_ascii=False))
    except Exception:  # the official scorer catches every error of its reading alike
        return NO_READING


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

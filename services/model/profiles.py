"""Error profiles of the scripted model: which mistakes it makes, how often, from which seed.

A profile is named in the model spec after ``scripted:``: a preset (``perfect``, ``noisy``) or
explicit rates, ``wrong_tool=0.1,missing_arg=0.1,...,seed=3``, optionally after a preset
(``noisy,seed=5``). Each mistake kind is built to surface in one evaluator category
(:func:`sopgym.evaluation.scorers.calls.error_taxonomy`):

=================  =====================================================  ===============
kind               what the model does                                    category
=================  =====================================================  ===============
missing_arg        drops a required argument of the due call             validation
bad_type           passes an argument with the wrong JSON type           type
wrong_value        passes a valid but wrong value to the due tool        wrong_value
wrong_tool         calls another SOP tool with the due call's arguments  as the tool answers
hallucinated_tool  calls a tool that is not in the catalog               hallucinated
skip_step          silently skips a (non-first) SOP step                 (tool recall only)
blank              answers at once without calling any tool              blank (+wrong_final)
wrong_final        reports one output field wrong                        wrong_final
invalid_final      leaves a required output field out of its answer      wrong_final
=================  =====================================================  ===============

``wrong_final`` keeps the answer valid against the output schema and never changes a free-text
key (it would not be wrong); ``invalid_final`` makes it invalid: SOP-Maze's graded score
(``answer_schema``) gives them 0.2 and 0.

After a mistaken call the model makes the correct call next, as a real model recovering from a
tool error would. A skipped step's result is the one the model expects (it never sees one).
``wrong_node`` applies to dependency-graph answers only (TELLER's stage 1): the model selects
an API that was not among those shown in place of a true one, edges included, so node
precision and recall fall (:mod:`.graphs`).

``messy_format`` is not a mistake: it varies how replies are written (code fences, single
quotes, trailing prose) so agents' parsers are exercised.

Behaviours (:mod:`.behaviours`) play what small real models do, drawn per case at their rate:
``tools_late`` first answers with a guessed JSON object in a code fence (no tool call, not in
the answer's declared form) and follows the SOP once told to; ``repeat_failing`` repeats a
refused call unchanged instead of recovering; ``plan_xml``, ``plan_list`` and ``plan_prose``
write plans as ``<step>`` elements, as a numbered list, or as prose no parser can read.
The habits of a small model on llama.cpp (docs/local-models.md): ``fenced_calls`` and
``hermes_calls`` write each tool call as text (a fenced ``{"name", "arguments"}`` block, or
Hermes ``<tool_call>`` tags) instead of native ``tool_calls``; ``copies_format`` copies the
ReAct prompt's example round as its first reply; ``bare_enums`` writes an enum value that looks
like a number as a number unless the prompt shows it quoted; ``truncates`` has its first reply
cut at the length limit (``finish_reason: length``); ``repeats_success`` makes each successful
call again, unchanged, right after its result (told it is repeating itself, or asked anything
else, it goes on); ``echoes_format`` goes on after its
ReAct action, echoing the prompt's instructions (what stop sequences must cut).
Under ``fc`` (issue 48): ``answers_first`` answers in the tags with a guess, turn after turn
until it has made a call, when the system prompt's first example is the answer's (no example
call before it); ``answers_unforced`` does so whatever the prompt shows (the 1.5B on
content flagging under every prompt measured): only a forced call (``tool_choice:
"required"``, which the scripted model obeys as a grammar-constrained server does) makes it
call; ``untagged_answers`` writes each final answer as its object alone in a JSON code fence,
without the tags.

Latency knobs (:mod:`.latency`, docs/model-latency.md) say how long a reply takes and join any
profile: ``latency=2`` (seconds a call), the ``gpu`` preset (a batching GPU server) anywhere
in the spec, or the knobs one by one (``ttft``, ``prefill``, ``tpot``, ``decode_slowdown``,
``capacity``, ``kv_cache``): ``noisy,latency=0.5``, ``gpu,capacity=64``. Items apply left to
right, so a knob after ``gpu`` overrides the preset's.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from sopgym.core.exceptions import UsageError
from sopgym.services.model.latency import (
    FLOAT_KNOBS,
    INT_KNOBS,
    KNOBS,
    LATENCY_PRESETS,
    LatencyProfile,
)

NO_LATENCY = LatencyProfile()

STEP_KINDS = (
    "wrong_tool",
    "missing_arg",
    "bad_type",
    "wrong_value",
    "skip_step",
    "hallucinated_tool",
)
TASK_KINDS = ("blank", "wrong_final", "invalid_final")
STYLE_KINDS = ("messy_format",)
BEHAVIOUR_KINDS = (
    "tools_late",
    "repeat_failing",
    "plan_xml",
    "plan_list",
    "plan_prose",
    # what Qwen2.5-Coder-1.5B did on llama-server (issue 37), one behaviour each
    "fenced_calls",
    "hermes_calls",
    "copies_format",
    "bare_enums",
    "truncates",
    "repeats_success",
    "echoes_format",
    # what it did under fc (issue 48): answers first, and answers without the tags
    "answers_first",
    "untagged_answers",
    "answers_unforced",
)
# dependency-graph answers only (stage 1): select a wrong API in place of a true one
GRAPH_KINDS = ("wrong_node",)
KINDS = (*STEP_KINDS, *TASK_KINDS, *STYLE_KINDS, *BEHAVIOUR_KINDS, *GRAPH_KINDS)

PRESETS: dict[str, dict[str, float]] = {
    "perfect": {},
    "noisy": {
        "wrong_tool": 0.04,
        "missing_arg": 0.06,
        "bad_type": 0.04,
        "wrong_value": 0.04,
        "skip_step": 0.03,
        "hallucinated_tool": 0.02,
        "blank": 0.02,
        "wrong_final": 0.08,
        "messy_format": 0.3,
    },
    # small local models, as seen on llama.cpp: a guessed answer first, stuck on a refusal
    "guesser": {"tools_late": 1.0},
    "stubborn": {"missing_arg": 1.0, "repeat_failing": 1.0},
    # TELLER's stage 1 as weaker models play it: wrong APIs selected, edges dropped
    "wrong_nodes": {"wrong_node": 0.2, "skip_step": 0.1},
    # Qwen2.5-Coder-1.5B on llama-server, as issue 37 saw it
    "small_local": {
        "fenced_calls": 1.0,
        "copies_format": 1.0,
        "bare_enums": 1.0,
        "repeats_success": 0.3,
        "echoes_format": 1.0,
    },
}


class ProfileError(UsageError, ValueError):
    pass


@dataclass(frozen=True)
class ErrorProfile:
    name: str
    rates: dict[str, float] = field(default_factory=dict)
    seed: int = 0
    latency: LatencyProfile = NO_LATENCY

    def rate(self, kind: str) -> float:
        return self.rates.get(kind, 0.0)

    @property
    def perfect(self) -> bool:
        return not any(self.rates.get(k, 0.0) for k in (*STEP_KINDS, *TASK_KINDS, *GRAPH_KINDS))


def parse_profile(text: str) -> ErrorProfile:
    """``""``/``perfect``/``noisy``/``k=v,...`` (a leading preset may be extended), with
    latency knobs and presets anywhere."""
    text = text.strip() or "perfect"
    rates: dict[str, float] = {}
    seed = 0
    latency: dict[str, Any] = {}
    for i, item in enumerate(part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            if key in LATENCY_PRESETS:
                latency.update(LATENCY_PRESETS[key].knobs())
                continue
            if i != 0 or key not in PRESETS:
                presets = ", ".join([*PRESETS, *LATENCY_PRESETS])
                raise ProfileError(
                    f"unknown profile {key!r} (presets: {presets}; or kind=rate, or a "
                    f"latency knob: {', '.join(KNOBS)})"
                )
            rates.update(PRESETS[key])
            continue
        if key in KNOBS:
            latency[key] = _knob(key, value.strip())
            continue
        if key == "seed":
            try:
                seed = int(value)
            except ValueError:
                raise ProfileError(f"seed must be an integer, got {value!r}") from None
            continue
        if key not in KINDS:
            raise ProfileError(
                f"unknown error kind {key!r} (known: {', '.join(KINDS)}; latency knobs: "
                f"{', '.join(KNOBS)})"
            )
        try:
            rate = float(value)
        except ValueError:
            raise ProfileError(f"rate of {key} must be a number, got {value!r}") from None
        if not 0.0 <= rate <= 1.0:
            raise ProfileError(f"rate of {key} must be within [0, 1], got {rate}")
        rates[key] = rate
    if sum(rates.get(k, 0.0) for k in STEP_KINDS) > 1.0:
        raise ProfileError("per-step error rates add up to more than 1")
    return ErrorProfile(text, rates, seed, LatencyProfile(**latency))


MAX_SECONDS = 3600.0  # a knob's seconds beyond an hour are a typo, not a model


def _knob(key: str, value: str) -> float | int:
    """A latency knob's value, or a ProfileError naming the knob."""
    if key in INT_KNOBS:
        try:
            count = int(value)
        except ValueError:
            count = -1
        if count < 0:
            raise ProfileError(f"latency knob {key} must be a whole number >= 0, got {value!r}")
        return count
    assert key in FLOAT_KNOBS
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    high, what = (1.0, "tpot's growth per other running sequence") if key == "decode_slowdown" \
        else (MAX_SECONDS, "seconds")  # fmt: skip
    if not (0.0 <= number <= high):  # also refuses nan and inf
        raise ProfileError(
            f"latency knob {key} must be a number from 0 to {high:g} ({what}), got {value!r}"
        )
    return number


def profile_for_model(model: str | None, default: ErrorProfile) -> ErrorProfile:
    """The profile a request's ``model`` names (``scripted:<profile>``), else ``default``: a
    bare ``scripted``, or a client that knows the server only as an OpenAI endpoint, gets the
    server's default profile."""
    if not model or not model.startswith("scripted:"):
        return default
    return _parse_cached(model.partition(":")[2])


def with_request_seed(profile: ErrorProfile, seed: int) -> ErrorProfile:
    """``profile`` with its draws also depending on a request's sampling ``seed``; seed 0
    (or none) leaves the profile's own draws, so a run without a seed plays as before."""
    if not seed:
        return profile
    digest = hashlib.blake2b(f"{profile.seed}|{seed}".encode(), digest_size=6).digest()
    return replace(profile, seed=int.from_bytes(digest, "big"))


@lru_cache(maxsize=64)
def _parse_cached(text: str) -> ErrorProfile:
    return parse_profile(text)


def check_model_spec(spec: str) -> None:
    """:class:`UsageError` for a model spec that cannot parse (or a scripted model's profile
    that does not); whether the model answers is checked later (the runner's
    ``check_model``). Here because ``sopgym run`` and the user simulator both refuse so."""
    from sopgym.agents.models import ModelUnavailable, is_scripted, parse_model_spec

    try:
        parse_model_spec(spec)
        if is_scripted(spec):
            parse_profile(spec.partition(":")[2])
    except (ModelUnavailable, ProfileError) as error:
        raise UsageError(f"--model: {error}") from None

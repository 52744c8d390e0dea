"""sopgym as an Inspect AI task: ``inspect eval sopgym/sopgym_task -T domain=patient_intake
--model <any Inspect model>``.

Each sample is one task of the domain: its system prompt (the answer contract) and its first
user turn (the SOP and the task input) are exactly the fc agent's (:mod:`sopgym.agents.prompts`).
The solver opens a gateway episode of the sample's task, offers the model the episode's tools
(those sopgym's gateway serves: the domain's, plus ``distractors``), makes every tool call the
model asks for through the gateway, and finishes the episode with the final answer the model
gives (the ``<final_answer>`` object) or, past ``max_steps`` model turns, with none. The scorers
are sopgym's: the episode's record is scored once with
:func:`~sopgym.evaluation.scoring.score_episode`, as ``sopgym run`` scores it, and each of the
domain's scorers is an Inspect scorer of the same name (its value and explanation; ``success``:
every gating scorer passed, with ``accuracy``). A scorer that does not apply to a task gives no
score for it (an Inspect score cannot be empty).

The gateway: ``-T gateway=URL`` uses a running one; without it, the embedded stack (the
domain's tool service and a gateway on loopback) starts the first time a sample needs it and
stops when the process exits. A failure of the gateway or a service is the sample's error,
never a score.
"""

from __future__ import annotations

import atexit
import contextlib
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, accuracy, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

from sopgym.agents.prompts import case_message, system_prompt
from sopgym.client import Episode, GatewayClient
from sopgym.core import dataset
from sopgym.core.answers import MESSAGE_ACTION, extract_final_answer, message_action_spec
from sopgym.core.dataset import DomainData
from sopgym.core.dialogue import DIALOGUE
from sopgym.core.exceptions import DataError
from sopgym.core.registry import load_domain
from sopgym.core.trajectory import Trajectory
from sopgym.evaluation.scorers import scorers_for
from sopgym.evaluation.scoring import score_episode
from sopgym.interop.inspect_log import SUCCESS, tool_infos, verdict
from sopgym.interop.inspect_model import TaskArgumentError, want_domains
from sopgym.types import JSON

RECORD_KEY = "sopgym:record"  # the gateway's record of the sample's episode (solver -> scorers)
SCORE_KEY = "sopgym:score"  # the episode's score, computed once by the first scorer
OUTPUTS_KEY = "sopgym:outputs"  # the final answer the episode was finished with


@dataclass(frozen=True)
class Episodes:
    """Where a task's episodes are played: a gateway and how episodes are opened there."""

    domain: str
    gateway: str | None
    distractors: int | None
    sop_variant: str


class _Gateways:
    """The embedded stacks this process started, one per domain, stopped at exit."""

    def __init__(self) -> None:
        self._urls: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stacks = contextlib.ExitStack()
        atexit.register(self._stacks.close)

    def url(self, domain: str) -> str:
        from sopgym.orchestration.stack import embedded_stack

        with self._lock:
            if domain not in self._urls:
                logs = Path(self._stacks.enter_context(tempfile.TemporaryDirectory("-sopgym")))
                stack = self._stacks.enter_context(embedded_stack([domain], logs))
                self._urls[domain] = stack.gateway_url
            return self._urls[domain]


_gateways = _Gateways()
_data: dict[str, DomainData] = {}


def _domain_data(domain: str) -> DomainData:
    if domain not in _data:
        _data[domain] = dataset.load(load_domain(domain))
    return _data[domain]


def _samples(data: DomainData, sop_variant: str, limit: int | None) -> list[Sample]:
    pack = data.domain
    sop = pack.sop(sop_variant)
    samples = []
    for item in data.tasks[:limit] if limit else data.tasks:
        messages: list[ChatMessage] = [
            ChatMessageSystem(content=system_prompt(pack.output_schema)),
            ChatMessageUser(
                content=case_message(sop, item.inputs_for(sop_variant), item.conversation)
            ),
        ]
        samples.append(
            Sample(
                id=item.id,
                input=messages,
                target=orjson.dumps(data.gold[item.id].outputs).decode(),
                metadata={"domain": pack.name, "task_id": item.id, "kind": item.kind},
            )
        )
    return samples


@task
def sopgym_task(
    domain: str = "patient_intake",
    limit: int | None = None,
    sop_variant: str = "clean",
    distractors: int | None = None,
    gateway: str | None = None,
    max_steps: int = 64,
) -> Task:
    """One sopgym domain as an Inspect task (``-T domain=...``; ``limit``: its first N tasks;
    ``gateway``: a running gateway's URL, else the embedded stack)."""
    try:
        data = _domain_data(domain)
    except KeyError as error:  # an unknown domain: the user's mistake, said in a line
        raise TaskArgumentError(f"sopgym_task: {error.args[0] if error.args else error}") from None
    if sop_variant not in data.domain.sop_files:
        known = ", ".join(data.domain.sop_files)
        raise TaskArgumentError(f"sopgym_task: domain {domain} has no SOP variant {sop_variant!r} "
                         f"(known: {known})")  # fmt: skip
    want_domains([domain])
    where = Episodes(domain, gateway, distractors, sop_variant)
    names = sorted({s.name for item in data.tasks for s in scorers_for(data.domain, item)})
    return Task(
        dataset=MemoryDataset(_samples(data, sop_variant, limit), name=domain),
        solver=sopgym_agent(where, max_steps),
        scorer=[success(), *(sopgym_scorer(name) for name in names)],
        metadata={"domain": domain, "sop_variant": sop_variant, "distractors": distractors},
    )


def _tool_result(content: Any) -> str:
    return orjson.dumps(content).decode()


@solver
def sopgym_agent(where: Episodes, max_steps: int = 64) -> Solver:
    """The function-calling loop over a gateway episode of the sample's task."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        data = _domain_data(where.domain)
        task_id = str(state.metadata["task_id"])
        url = where.gateway
        if not url:  # the embedded stack, started by the first sample that needs it
            url = await anyio.to_thread.run_sync(_gateways.url, where.domain)
        client = GatewayClient(str(url))
        try:
            episode = await anyio.to_thread.run_sync(
                lambda: client.open(task_id, where.domain, distractors=where.distractors,
                                    sop_variant=where.sop_variant, meta={"agent": "inspect"})
            )  # fmt: skip
            state.store.set(OUTPUTS_KEY, await _play(state, episode, data, max_steps))
            record_json = await anyio.to_thread.run_sync(client.record, episode.id, episode.token)
            state.store.set(RECORD_KEY, record_json)
        finally:
            client.close()
        return state

    return solve


async def _play(state: TaskState, episode: Episode, data: DomainData, max_steps: int) -> JSON:
    """Model turns until an answer (or ``max_steps``); the episode is finished either way."""
    model = get_model()
    item = next(t for t in data.tasks if t.id == state.metadata["task_id"])
    specs = [*episode.tools, message_action_spec()] if item.kind == DIALOGUE else episode.tools
    tools = tool_infos(specs)
    if len(tools) != len(specs):  # never a tool silently missing from the model's catalog
        taken = {t.name for t in tools}
        refused = [s["name"] for s in specs if s["name"] not in taken]
        raise DataError(f"Inspect cannot read the argument schema of {', '.join(refused)}")
    fields = list(episode.output_schema.get("properties", {}))
    outputs: JSON = {}
    for _ in range(max_steps):
        state.output = await model.generate(state.messages, tools=tools)
        reply = state.output.message
        state.messages.append(reply)
        if not reply.tool_calls:
            outputs = extract_final_answer(reply.text, fields) or {}
            break
        for call in reply.tool_calls:
            if call.function == MESSAGE_ACTION:
                said = call.arguments.get("content")
                result = await anyio.to_thread.run_sync(episode.message, said)
            else:
                result = await anyio.to_thread.run_sync(
                    episode.call, call.function, call.arguments, call.id
                )
            state.messages.append(
                ChatMessageTool(
                    content=_tool_result(result.content),
                    tool_call_id=call.id,
                    function=call.function,
                )
            )
    await anyio.to_thread.run_sync(episode.finish, outputs)
    return outputs


def _score(state: TaskState) -> JSON:
    """The sample's episode scored once, as ``sopgym run`` scores it (cached for the other
    scorers)."""
    cached = state.store.get(SCORE_KEY)
    if cached is not None:
        return dict(cached)
    data = _domain_data(str(state.metadata["domain"]))
    task_id = str(state.metadata["task_id"])
    item = next(t for t in data.tasks if t.id == task_id)
    record = state.store.get(RECORD_KEY)
    trajectory = Trajectory.from_json(record) if isinstance(record, dict) else None
    scored = score_episode(data.domain, item, trajectory, data.gold[task_id]).to_json()
    state.store.set(SCORE_KEY, scored)
    return scored


@scorer(metrics=[accuracy(), stderr()], name=SUCCESS)
def success() -> Scorer:
    """1.0 when the episode completed and every gating scorer passed (sopgym's success)."""

    async def score(state: TaskState, target: Target) -> Score:
        scored = _score(state)
        return Score(
            value=1.0 if scored["success"] else 0.0,
            answer=orjson.dumps(state.store.get(OUTPUTS_KEY) or {}).decode(),
            explanation=verdict(scored),
            metadata={"errors": scored.get("errors", {})},
        )

    return score


def sopgym_scorer(name: str) -> Scorer:
    """sopgym's scorer ``name`` as an Inspect scorer of that name (its mean over the samples
    it applies to)."""

    @scorer(metrics=[mean()], name=name)
    def named() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score | None:
            result = _score(state)["scores"].get(name) or {}
            if result.get("value") is None:
                return None  # does not apply to this task
            return Score(
                value=float(result["value"]),
                explanation=result.get("explanation") or None,
                metadata={"gates": result.get("gates", False)},
            )

        return score

    return named()

"""The pipeline's model calls: through the agents' single model door, or replayed from a cassette.

Every call goes through :func:`sopgym.agents.llm.invoke_model`, the function every agent's
calls go through: the same retries, usage record and GenAI ``chat`` span (purpose: the
stage's name). ``--model replay:<folder>`` swaps the chat model for :class:`ReplayChat`, which
answers from recorded responses: one cassette file per stage, ``<stage>.md`` for every
attempt, or ``<stage>.<attempt>.md`` where an attempt has its own; ``usage.json`` may hold the
recorded token counts. ``--record <folder>`` writes such a cassette from a live session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from sopgym.agents.base import AgentContext
from sopgym.agents.llm import LLM, invoke_model
from sopgym.agents.models import ModelSpec
from sopgym.core.exceptions import DataError

REPLAY = "replay:"
USAGE_FILE = "usage.json"


class CassetteMissing(DataError, LookupError):
    """The cassette has no recorded response for this stage and attempt."""


class ReplayChat(BaseChatModel):
    """A chat model that answers from a cassette folder (never retried: a missing recording
    is not transient)."""

    cassette: Path
    stage: str = ""
    attempt: int = 1

    @property
    def _llm_type(self) -> str:
        return "sopgym-replay"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        path = cassette_file(self.cassette, self.stage, self.attempt)
        if path is None:
            raise CassetteMissing(f"{self.cassette} has no {self.stage}.md")
        usage = _recorded_usage(self.cassette).get(self.stage, {})
        tokens_in = int(usage.get("input_tokens", 0))
        tokens_out = int(usage.get("output_tokens", 0))
        message = AIMessage(
            content=path.read_text(),
            usage_metadata={
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
            response_metadata={"model_name": f"replay:{self.cassette.name}"},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def cassette_file(folder: Path, stage: str, attempt: int) -> Path | None:
    for path in (folder / f"{stage}.{attempt}.md", folder / f"{stage}.md"):
        if path.is_file():
            return path
    return None


def _recorded_usage(folder: Path) -> dict[str, Any]:
    path = folder / USAGE_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


@dataclass
class Reply:
    text: str
    input_tokens: int
    output_tokens: int
    seconds: float


class GenerationModel:
    """One chat call per stage attempt; the pipeline never sees which provider answers."""

    def __init__(self, llm: LLM, record: Path | None = None) -> None:
        self.llm = llm
        self.record = record

    @classmethod
    def from_spec(
        cls, spec: str, base_url: str | None = None, record: Path | None = None
    ) -> GenerationModel:
        if spec.startswith(REPLAY):
            folder = Path(spec[len(REPLAY) :]).expanduser()
            if not folder.is_dir():
                raise FileNotFoundError(f"no cassette folder {folder}")
            chat = ReplayChat(cassette=folder)
            return cls(LLM(ModelSpec("replay", folder.name), chat, retries=0), record)
        # generation writes whole files in one answer: a longer timeout than an agent's step
        return cls(LLM.from_spec(spec, base_url, temperature=0.0, request_timeout=600.0), record)

    @property
    def label(self) -> str:
        return self.llm.spec.label

    def complete(self, stage: str, attempt: int, system: str, prompt: str) -> Reply:
        if isinstance(self.llm.chat, ReplayChat):
            self.llm.chat.stage, self.llm.chat.attempt = stage, attempt
        context = AgentContext()
        message = invoke_model(
            self.llm, [SystemMessage(system), HumanMessage(prompt)], context, purpose=stage
        )
        usage = context.usage[-1]
        text = message.content if isinstance(message.content, str) else str(message.content)
        reply = Reply(text, usage["input_tokens"], usage["output_tokens"], usage["latency_s"])
        if self.record is not None:
            self._record(stage, attempt, reply)
        return reply

    def _record(self, stage: str, attempt: int, reply: Reply) -> None:
        assert self.record is not None
        self.record.mkdir(parents=True, exist_ok=True)
        name = f"{stage}.md" if attempt == 1 else f"{stage}.{attempt}.md"
        (self.record / name).write_text(reply.text)
        usage = _recorded_usage(self.record)
        usage[stage] = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
        (self.record / USAGE_FILE).write_text(json.dumps(usage, indent=2) + "\n")

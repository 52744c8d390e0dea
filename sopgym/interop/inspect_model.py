"""The scripted model as an Inspect model provider: ``inspect eval ... --model sopgym/scripted``
(or ``sopgym/scripted:noisy``, any profile ``--model scripted:...`` takes) plays the domain's
reference policy offline, in process, exactly as the scripted model server does: the Inspect
conversation is sent as the Chat Completions body the server would receive
(:func:`sopgym.services.model.behaviours.play`) and its reply read back.

The domains it knows are those the sopgym tasks of this process asked for
(:func:`want_domains`) and any named with ``-M domains=a,b``; with neither, every registered
domain (slow: each dataset loads).
"""

from __future__ import annotations

import threading
from typing import Any

import orjson
from inspect_ai._util.error import PrerequisiteError  # (Inspect's one-line refusal)
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolCall, ToolChoice, ToolFunction, ToolInfo

from sopgym.core.exceptions import UsageError
from sopgym.types import JSON


class TaskArgumentError(UsageError, PrerequisiteError):
    """A ``-T`` argument or ``--model`` name that names nothing sopgym has: Inspect prints a
    prerequisite error's message as one line, with no traceback, and runs nothing."""

    def __init__(self, message: str) -> None:
        UsageError.__init__(self, message)
        PrerequisiteError.__init__(self, message)

_wanted: set[str] = set()  # domains the sopgym tasks of this process were created for
_wanted_lock = threading.Lock()


def want_domains(domains: list[str]) -> None:
    """Make the scripted provider of this process know ``domains`` (called by the task)."""
    with _wanted_lock:
        _wanted.update(domains)


def _openai_message(message: ChatMessage) -> JSON:
    """An Inspect chat message as the Chat Completions message the server reads."""
    text = message.text
    if message.role == "assistant":
        out: JSON = {"role": "assistant", "content": text}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.function,
                        "arguments": orjson.dumps(call.arguments).decode(),
                    },
                }
                for call in message.tool_calls
            ]
        return out
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": text}
    return {"role": message.role, "content": text}


def _openai_tool(tool: ToolInfo) -> JSON:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters.model_dump(exclude_none=True),
        },
    }


def completion_body(
    model: str,
    messages: list[ChatMessage],
    tools: list[ToolInfo],
    config: GenerateConfig,
    tool_choice: ToolChoice = "auto",
) -> JSON:
    """The Chat Completions request an OpenAI-compatible client would send, with Inspect's
    ``tool_choice`` in OpenAI's words (``"any"`` is ``"required"``, a named function forces
    that one), so the scripted model calls a tool when the solver forces one."""
    body: JSON = {"model": model, "messages": [_openai_message(m) for m in messages]}
    if tools:
        body["tools"] = [_openai_tool(t) for t in tools]
        body["tool_choice"] = _openai_tool_choice(tool_choice)
    if config.seed is not None:
        body["seed"] = config.seed
    if config.stop_seqs:
        body["stop"] = list(config.stop_seqs)
    return body


def _openai_tool_choice(choice: ToolChoice) -> JSON | str:
    if isinstance(choice, ToolFunction):
        return {"type": "function", "function": {"name": choice.name}}
    return "required" if choice == "any" else choice


def model_output(model: str, reply: JSON) -> ModelOutput:
    """A Chat Completions response body as an Inspect model output."""
    choice = reply["choices"][0]
    message = choice["message"]
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        try:
            arguments = orjson.loads(function.get("arguments") or "{}")
        except orjson.JSONDecodeError:
            arguments = {"_raw": function.get("arguments")}
        calls.append(
            ToolCall(
                id=str(call.get("id") or f"call_{index}"),
                function=str(function.get("name")),
                arguments=arguments if isinstance(arguments, dict) else {"value": arguments},
            )
        )
    usage = reply.get("usage") or {}
    tokens_in, tokens_out = int(usage.get("prompt_tokens", 0)), int(
        usage.get("completion_tokens", 0))  # fmt: skip
    finish = choice.get("finish_reason")
    return ModelOutput(
        model=model,
        choices=[
            ChatCompletionChoice(
                message=ChatMessageAssistant(
                    content=message.get("content") or "", tool_calls=calls or None, model=model
                ),
                stop_reason="tool_calls" if calls else ("stop" if finish == "stop" else "unknown"),
            )
        ],
        usage=ModelUsage(
            input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out
        ),
    )


@modelapi(name="sopgym")
class ScriptedModelAPI(ModelAPI):
    """``sopgym/scripted[:profile]``: the scripted model, in process."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - Inspect's own signature
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        from sopgym.services.model.profiles import parse_profile, profile_for_model

        try:
            profile_for_model(model_name, parse_profile("perfect"))
        except ValueError as error:
            raise TaskArgumentError(f"model sopgym/{model_name}: {error}") from None
        named = model_args.get("domains")
        self._named = [d for d in str(named).split(",") if d] if named else []
        self._engine: Any = None
        self._engine_domains: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def _scripted(self) -> Any:
        """The engine over the domains wanted now (rebuilt when a task wants another)."""
        from sopgym.core import dataset
        from sopgym.core.registry import domain_names, load_domain
        from sopgym.services.model.engine import ScriptedModel
        from sopgym.services.model.profiles import parse_profile

        with _wanted_lock:
            domains = frozenset(self._named) | frozenset(_wanted)
        with self._lock:
            if self._engine is None or not domains <= self._engine_domains:
                names = sorted(domains | self._engine_domains) or domain_names()
                data = [dataset.load(load_domain(name)) for name in names]
                self._engine = ScriptedModel(data, parse_profile("perfect"))
                self._engine_domains = frozenset(names)
            return self._engine

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        import anyio

        from sopgym.services.model.behaviours import play

        body = completion_body(self.model_name, input, tools, config, tool_choice)
        engine = await anyio.to_thread.run_sync(self._scripted)
        reply = play(engine, body, len(orjson.dumps(body)))
        return model_output(self.model_name, reply)

"""A run as an Inspect eval log (``sopgym export RUN --format inspect``), so that ``inspect
view`` opens it and ``inspect_ai.log.read_eval_log`` reads it.

One sample per episode (task and trial; the trial is the sample's epoch, 1-based): the task's
input and the gold answer as JSON text (``input``, ``target``), the agent's answer as the
sample's output, and the scores: ``success`` (1.0 or 0.0, with the run's verdict in words)
and every scorer that applies to the task under its own name, with its explanation (a scorer
that does not apply, its value ``None``, is listed in the sample's metadata under
``not_applicable``: an Inspect score has no empty value). Every tool call the gateway
recorded is a tool event (a refusal as a tool error with our error code); the model calls'
token counts are the sample's model usage. A run made with ``--capture-messages`` has each
model call's messages on its ``chat`` span (not in its results): given the run's traces, every
such call is a model event too (its input and output as Inspect chat messages, its token
usage), placed among the tool events in the order the calls began. An
episode the infrastructure failed carries the cause as the sample's error. The log's result
is TSR as the ``success`` score's ``accuracy`` over the scored episodes.

``inspect_ai`` is optional (``pip install inspect-ai``): it is imported only here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sopgym.core.answers import FINAL_TAG
from sopgym.types import JSON

if TYPE_CHECKING:
    from inspect_ai.model import StopReason

    from sopgym.viewer.traces import ChatTurn, EpisodeTrace

SUCCESS = "success"  # the name of the episode's pass/fail score in the log


def _text(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _arguments(value: Any) -> dict[str, Any]:
    """A call's arguments as Inspect's tool events hold them (an object)."""
    return value if isinstance(value, dict) else {"value": value}


def _started(config: JSON) -> datetime:
    created = str(config.get("created") or "")
    try:
        return datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return datetime.now(UTC)


# a GenAI finish reason as an Inspect stop reason (anything else: "unknown")
_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


def _parts_text(parts: list[Any], kind: str) -> str:
    return "\n".join(str(p.get("content", "")) for p in parts if p.get("type") == kind)


def _chat_message(message: Any) -> Any:
    """One GenAI-convention message (``role`` and typed ``parts``) as an Inspect chat
    message: text parts are its content, ``tool_call`` parts an assistant's tool calls, a
    ``tool_call_response`` part a tool message (one per response)."""
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall

    if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
        return [ChatMessageUser(content=_text_of(message))]  # not in the convention's shape
    role, parts = message.get("role"), [p for p in message["parts"] if isinstance(p, dict)]
    if role == "tool":
        return [
            ChatMessageTool(content=_text_of(p.get("response")), tool_call_id=p.get("id"))
            for p in parts
            if p.get("type") == "tool_call_response"
        ]
    text = _parts_text(parts, "text")
    if role == "system":
        return [ChatMessageSystem(content=text)]
    if role == "assistant":
        calls = [
            ToolCall(
                id=str(p.get("id") or f"call_{i}"),
                function=str(p.get("name")),
                arguments=_arguments(p.get("arguments")),
            )
            for i, p in enumerate(parts)
            if p.get("type") == "tool_call"
        ]
        return [ChatMessageAssistant(content=text, tool_calls=calls or None)]
    return [ChatMessageUser(content=text)]


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else _text(value)


def _messages(messages: Any) -> list[Any]:
    if not isinstance(messages, list):  # cut to fit its span: kept as the text it is
        return _chat_message(messages) if messages is not None else []
    return [m for message in messages for m in _chat_message(message)]


def tool_infos(definitions: Any) -> list[Any]:
    """Tool definitions (``gen_ai.tool.definitions``: name, description, JSON Schema
    parameters; or a gateway catalog's specs) as Inspect tool infos; one Inspect cannot read
    is left out."""
    from inspect_ai.tool import ToolInfo
    from pydantic import ValidationError

    tools = []
    for definition in definitions if isinstance(definitions, list) else []:
        try:
            tools.append(ToolInfo.model_validate({
                "name": definition["name"],
                "description": definition.get("description") or "",
                # (GenAI definitions say parameters; the gateway's catalog, input_schema)
                "parameters": definition.get("parameters") or definition.get("input_schema")
                or {},
            }))  # fmt: skip
        except (ValidationError, KeyError, TypeError, AttributeError):
            continue
    return tools


def _model_event(chat: ChatTurn, tools: list[Any]) -> Any:
    """A captured model call as an Inspect model event (``tools``: those it was offered)."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        GenerateConfig,
        ModelOutput,
        ModelUsage,
    )

    outputs = [m for m in _messages(chat.output_messages) if isinstance(m, ChatMessageAssistant)]
    finish = ""
    if isinstance(chat.output_messages, list) and chat.output_messages:
        last = chat.output_messages[-1]
        finish = str(last.get("finish_reason") or "") if isinstance(last, dict) else ""
    tokens_in, tokens_out = int(chat.input_tokens or 0), int(chat.output_tokens or 0)
    output = ModelOutput(
        model=chat.model,
        choices=[
            ChatCompletionChoice(message=m, stop_reason=_STOP_REASONS.get(finish, "unknown"))
            for m in outputs
        ],
        usage=ModelUsage(
            input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out
        ),
        time=chat.duration_ms / 1000,
    )
    return ModelEvent(
        timestamp=datetime.fromtimestamp(chat.start_ns / 1e9, UTC),
        working_start=0.0,
        model=chat.model,
        input=_messages(chat.input_messages),
        tools=tools,
        tool_choice="auto",
        config=GenerateConfig(),
        output=output,
        working_time=chat.duration_ms / 1000,
    )


CAPTURED, REBUILT = "captured", "rebuilt"  # where a sample's messages come from


def _answer_text(outputs: Any) -> str | None:
    """The agent's final answer as the viewer's Answer column shows it (None: it gave none)."""
    return None if outputs is None else _text(outputs)


def _call_result(call: JSON) -> str:
    """What the agent's model was shown for a recorded call: its result, or the refusal."""
    if call.get("error_code"):
        return _text({"error": {"code": call["error_code"], "field": call.get("error_field")}})
    return _text(call.get("result"))


def _rebuilt_messages(row: JSON, config: JSON) -> list[Any]:
    """The episode as the function-calling agent shows it to its model, rebuilt from the
    results row (a run without ``--capture-messages``): the system prompt and the SOP with the
    case, one assistant turn per recorded call with its result, and the final answer. A
    domain this process cannot load (an import not registered here) opens with the case
    input alone."""
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall

    from sopgym.agents.prompts import case_message, system_prompt
    from sopgym.core.exceptions import UsageError
    from sopgym.core.registry import load_domain

    inputs = row.get("inputs") or {}
    try:
        pack = load_domain(str(row["domain"]))
        sop = pack.sop(str(config.get("sop_variant") or "clean"))
        messages: list[Any] = [
            ChatMessageSystem(content=system_prompt(pack.output_schema)),
            ChatMessageUser(content=case_message(sop, inputs)),
        ]
    except (UsageError, KeyError, OSError):
        messages = [ChatMessageUser(content=_text(inputs))]
    for index, call in enumerate((row.get("trajectory") or {}).get("calls", [])):
        call_id, name = f"call_{index}", str(call["name"])
        messages.append(ChatMessageAssistant(content="", tool_calls=[
            ToolCall(id=call_id, function=name, arguments=_arguments(call.get("arguments")))
        ]))  # fmt: skip
        messages.append(
            ChatMessageTool(content=_call_result(call), tool_call_id=call_id, function=name)
        )
    answer = _answer_text(row.get("outputs"))
    if answer is not None:
        messages.append(ChatMessageAssistant(content=f"<{FINAL_TAG}>{answer}</{FINAL_TAG}>"))
    return messages


def _conversation(row: JSON, config: JSON, captured: list[ChatTurn]) -> tuple[list[Any], str]:
    """The sample's messages and where they come from: the last captured model call's input
    and its answer (the whole conversation as the model last saw it), else rebuilt."""
    if captured:
        last = captured[-1]
        return [*_messages(last.input_messages), *_messages(last.output_messages)], CAPTURED
    return _rebuilt_messages(row, config), REBUILT


def _sample(row: JSON, started: datetime, config: JSON, trace: EpisodeTrace | None = None) -> Any:
    from inspect_ai.event import ToolEvent
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score
    from inspect_ai.tool import ToolCallError

    score = row["score"]
    answer = _answer_text(row.get("outputs"))
    scores = {
        SUCCESS: Score(
            value=1.0 if score["success"] else 0.0,
            answer=answer,
            explanation=verdict(score),
            metadata={"completed": score["completed"], "errors": score.get("errors", {})},
        )
    }
    not_applicable = []
    for name, result in score.get("scores", {}).items():
        if result.get("value") is None:
            not_applicable.append(name)
            continue
        scores[name] = Score(
            value=float(result["value"]),
            answer=answer,
            explanation=result.get("explanation") or None,
            metadata={"gates": result.get("gates", False), "metrics": result.get("metrics", {})},
        )
    calls = (row.get("trajectory") or {}).get("calls", [])
    # (when it began, the event): model and tool events in the order they began; a call
    # without a trace keeps its place after the ones before it
    timed: list[tuple[int, Any]] = []
    begun = 0
    for index, call in enumerate(calls):
        begun = trace.call_starts.get(index, begun) if trace is not None else begun
        error = None
        if call.get("error_code"):
            error = ToolCallError("unknown", f"{call['error_code']}: {call.get('error_field')}")
        event = ToolEvent(
            timestamp=datetime.fromtimestamp(begun / 1e9, UTC) if begun else started,
            working_start=0.0,
            id=f"call_{index}",
            function=str(call["name"]),
            arguments=_arguments(call.get("arguments")),
            result=_text(call.get("result")),
            error=error,
            events=[],
            metadata={"status": call.get("status"), "error_code": call.get("error_code")},
        )
        timed.append((begun, event))
    chats = trace.chats if trace is not None else []
    captured = [c for c in chats if c.input_messages is not None or c.output_messages is not None]
    offered = tool_infos(trace.tool_definitions) if captured and trace is not None else []
    timed.extend((chat.start_ns, _model_event(chat, offered)) for chat in captured)
    events = [event for _, event in sorted(timed, key=lambda pair: pair[0])]
    llm = row.get("llm_calls") or []
    model = str(row.get("model") or row.get("agent") or "none")
    usage = {}
    tokens_in = sum(int(c.get("input_tokens") or 0) for c in llm)
    tokens_out = sum(int(c.get("output_tokens") or 0) for c in llm)
    if llm:
        usage[model] = ModelUsage(
            input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out
        )
    messages, source = _conversation(row, config, captured)
    replies = [m for m in messages if isinstance(m, ChatMessageAssistant)]
    last = replies[-1] if replies else ChatMessageAssistant(content=answer or "")
    output = ModelOutput(
        model=model,
        choices=[ChatCompletionChoice(message=last, stop_reason="stop")],
        usage=usage.get(model),
    )
    infra = score.get("infra_error")
    return EvalSample(
        id=f"{row['domain']}/{row['task_id']}",
        epoch=int(row.get("trial") or 0) + 1,
        input=_text(row.get("inputs") or {}),
        target=_text(row.get("gold_outputs") or {}),
        messages=messages,
        output=output,
        scores=scores,
        metadata={
            "domain": row["domain"],
            "task_id": row["task_id"],
            "episode_id": row.get("episode_id"),
            "agent": row.get("agent"),
            "not_applicable": not_applicable,
            "messages": source,
        },
        events=events,
        model_usage=usage,
        total_time=row.get("elapsed_s"),
        error=EvalError(message=infra, traceback="", traceback_ansi="") if infra else None,
    )


def verdict(score: JSON) -> str:
    if score.get("infra_error"):
        return f"not scored: the infrastructure failed ({score['infra_error']})"
    if score["success"]:
        return "success: every gating scorer passed"
    if not score["completed"]:
        return "incomplete: no final answer"
    failed = [n for n, r in score.get("scores", {}).items() if r.get("gates") and
              r.get("value") is not None and r["value"] < 1.0]  # fmt: skip
    return f"failed: {', '.join(failed) or 'a gating scorer'} did not pass"


def to_eval_log(
    rows: list[JSON], config: JSON, run_id: str, traces: dict[str, EpisodeTrace] | None = None
) -> Any:
    """The run's results rows and config as an Inspect ``EvalLog``; ``traces`` (per episode
    id, :func:`sopgym.viewer.traces.index_traces`) adds the captured model calls."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
        EvalStats,
    )

    started = _started(config)
    domains = list(config.get("domains") or sorted({r["domain"] for r in rows}))
    scored = [r for r in rows if not r["score"].get("infra_error")]
    tsr = sum(bool(r["score"]["success"]) for r in scored) / len(scored) if scored else 0.0
    model = str(config.get("model") or config.get("agent") or "none")
    run = run_args(config, run_id)
    spec = EvalSpec(
        created=started.isoformat(),
        task=f"sopgym/{'+'.join(domains)}",
        task_display_name=(
            f"{'+'.join(domains)} · {run['agent']} · {run['model']} · sop {run['sop_variant']}"
            f" · seed {run['seed']} · {run_id}"
        ),
        task_args=run,
        tags=[f"{key}:{value}" for key, value in run.items()],
        task_id=run_id,
        run_id=run_id,
        dataset=EvalDataset(
            name="+".join(domains), samples=len({(r["domain"], r["task_id"]) for r in rows})
        ),
        model=model,
        config=EvalConfig(epochs=int(config.get("trials") or 1)),
        metadata={"agent": config.get("agent"), "sopgym_config": config},
    )
    results = EvalResults(
        total_samples=len(rows),
        completed_samples=len(scored),
        scores=[
            EvalScore(
                name=SUCCESS,
                scorer="sopgym",
                scored_samples=len(scored),
                unscored_samples=len(rows) - len(scored),
                metrics={"accuracy": EvalMetric(name="accuracy", value=tsr)},
            )
        ],
    )
    elapsed = sum(float(r.get("elapsed_s") or 0.0) for r in rows)
    samples = [
        _sample(r, started, config, (traces or {}).get(str(r.get("episode_id")))) for r in rows
    ]
    stats = EvalStats(
        started_at=started.isoformat(),
        completed_at=(started + timedelta(seconds=elapsed)).isoformat(),
        model_usage=_usage_total(samples),
    )
    return EvalLog(status="success", eval=spec, results=results, stats=stats, samples=samples)


def run_args(config: JSON, run_id: str) -> dict[str, Any]:
    """What tells one run's log from another's of the same domains: the log's task args, and
    its tags as ``key:value``."""
    return {
        "run_id": run_id,
        "agent": config.get("agent"),
        "model": config.get("model"),
        "sop_variant": config.get("sop_variant") or "clean",
        "seed": config.get("seed") or 0,
        "trials": config.get("trials") or 1,
    }


def _usage_total(samples: list[Any]) -> dict[str, Any]:
    """The samples' token usage summed per model (the log's stats, which the viewer's header
    shows)."""
    from inspect_ai.model import ModelUsage

    total: dict[str, Any] = {}
    for sample in samples:
        for model, usage in sample.model_usage.items():
            total[model] = total.get(model, ModelUsage()) + usage
    return total


def write_inspect_log(
    rows: list[JSON],
    config: JSON,
    run_id: str,
    target: Path,
    traces: dict[str, EpisodeTrace] | None = None,
) -> Path:
    """Write the run as an Inspect log at ``target`` (``.eval``: Inspect's zip format;
    ``.json``: its JSON format)."""
    import os
    import tempfile

    from inspect_ai.log import write_eval_log

    from sopgym.core.jsonio import PRIVATE_MODE

    log = to_eval_log(rows, config, run_id, traces)
    # written in an owner-only folder beside the target, narrowed to owner-only (the log holds
    # the gold), then moved into place: at no moment readable by others
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as folder:
        written = Path(folder) / target.name
        write_eval_log(log, str(written), format="json" if target.suffix == ".json" else "eval")
        os.chmod(written, PRIVATE_MODE)
        os.replace(written, target)
    return target

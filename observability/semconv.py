"""Span and attribute names: the one vocabulary shared by the processes that emit spans and the
evaluator that reads them back.

Standard names follow the OpenTelemetry GenAI and HTTP semantic conventions; everything the
conventions do not cover (episodes, call records, run ids) lives under ``sopgym.``. Keeping
both sides on these constants is what lets the evaluator rebuild exactly what the gateway
recorded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# ---- OpenTelemetry GenAI semantic conventions ----
GEN_AI_OPERATION = "gen_ai.operation.name"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
OP_INVOKE_AGENT = "invoke_agent"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_PROVIDER = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"  # the episode id (chat and agent spans)
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"  # opt-in, on the agent's span
# A scorer's verdict, as an event on the span it evaluates (the task's root)
EVENT_EVALUATION_RESULT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
ERROR_TYPE = "error.type"
# opt-in capture of message content on chat spans (the GenAI instrumentations' variable)
CAPTURE_MESSAGES_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

# ---- MCP and JSON-RPC semantic conventions (the gateway's MCP door) ----
MCP_METHOD_NAME = "mcp.method.name"
MCP_SESSION_ID = "mcp.session.id"
MCP_PROTOCOL_VERSION = "mcp.protocol.version"
JSONRPC_REQUEST_ID = "jsonrpc.request.id"

# ---- which version of the GenAI conventions to emit ----
# The GenAI conventions ask instrumentations to keep emitting what they emitted by default and
# to switch to the latest experimental version when this comma-separated variable lists
# ``gen_ai_latest_experimental``. Here the switch renames what the latest conventions name
# differently (semantic-conventions-genai v0.1.0, their own repository): the runner's task
# root becomes ``invoke_agent sopgym.task`` (else ``task``; the workflow span of earlier
# drafts, ``invoke_workflow``, merged into ``invoke_agent`` and ``gen_ai.workflow.name`` became
# ``gen_ai.agent.name``)
# and the episode id is written as ``gen_ai.conversation.id`` only (else also as
# ``sopgym.episode.id``). What is new and has no older name (evaluation events, MCP attributes,
# ``gen_ai.conversation.id`` itself) is written either way. The evaluator reads both versions.
STABILITY_OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
GEN_AI_LATEST = "gen_ai_latest_experimental"
TASK_AGENT_NAME = "sopgym.task"  # gen_ai.agent.name of the task root under the latest version
TASK_SPAN_NAME = "task"  # the task root's name by default


def latest_genai(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``OTEL_SEMCONV_STABILITY_OPT_IN`` opts in to the latest GenAI conventions."""
    text = (os.environ if env is None else env).get(STABILITY_OPT_IN_ENV, "")
    return GEN_AI_LATEST in (v.strip() for v in text.split(","))


def episode_id_key() -> str:
    """The attribute that names the episode on the gateway's spans: ``sopgym.episode.id``, or
    ``gen_ai.conversation.id`` under the latest conventions."""
    return GEN_AI_CONVERSATION_ID if latest_genai() else EPISODE_ID


def episode_of(attributes: Mapping[str, object]) -> object:
    """The episode id a span names, under either version (None when it names none)."""
    found = attributes.get(EPISODE_ID)
    return found if found is not None else attributes.get(GEN_AI_CONVERSATION_ID)


# ---- HTTP semantic conventions ----
HTTP_METHOD = "http.request.method"
HTTP_ROUTE = "http.route"
HTTP_STATUS = "http.response.status_code"
URL_PATH = "url.path"

# ---- sopgym: the task and run an episode belongs to ----
RUN_ID = "sopgym.run.id"
TASK_ID = "sopgym.task.id"
DOMAIN = "sopgym.domain"
TASK_STATUS = "sopgym.task.status"  # finished | failed, as the agent worker saw it
# on the runner's task root, once scored: success | failed | incomplete | infra_error
TASK_OUTCOME = "sopgym.task.outcome"
TASK_SUCCESS = "sopgym.task.success"
TASK_ERROR_CLASSES = "sopgym.task.error_classes"  # the error taxonomy classes it made
LLM_CALLS = "sopgym.llm.calls"  # on the root: the episode's LLM calls (its chat spans)
EPISODE_ID = "sopgym.episode.id"

# ---- sopgym: the gateway's view of an episode (what the evaluator scores) ----
GATEWAY_OP = "sopgym.gateway.op"  # open | call | finish
OP_OPEN, OP_CALL, OP_FINISH = "open", "call", "finish"
CATALOG = "sopgym.episode.catalog"
DISTRACTORS = "sopgym.episode.distractors"
SOP_VARIANT = "sopgym.sop.variant"
OUTPUTS = "sopgym.episode.outputs"
OUTPUTS_TRUNCATED = "sopgym.episode.outputs.truncated"
# on the finish span: the stateful episode's final state (JSON text), and the conversation's
# turns (JSON text, [{"role", "content"}]) so the evaluator scores them from the trace alone
FINAL_STATE = "sopgym.episode.final_state"
FINAL_STATE_TRUNCATED = "sopgym.episode.final_state.truncated"
FINAL_STATE_ERROR = "sopgym.episode.final_state.error"  # its service failed to close it
MESSAGES = "sopgym.episode.messages"
MESSAGES_TRUNCATED = "sopgym.episode.messages.truncated"
OP_MESSAGE = "message"  # sopgym.gateway.op of a message to the simulated user
MESSAGE_INDEX = "sopgym.message.index"  # which exchange of the episode (0-based)
MESSAGE_DONE = "sopgym.message.done"  # the user ended the conversation with this reply
TRIAL = "sopgym.trial"  # on the agent's root span: which of the run's trials (0-based)
CALL_COUNT = "sopgym.episode.calls"
CALL_INDEX = "sopgym.call.index"
CALL_ERROR_CODE = "sopgym.call.error.code"
CALL_ERROR_FIELD = "sopgym.call.error.field"
CALL_IN_CATALOG = "sopgym.call.in_catalog"
CALL_DISTRACTOR = "sopgym.call.distractor"
ARGUMENTS_TRUNCATED = "sopgym.call.arguments.truncated"  # original size in bytes
ARGUMENTS_DIGEST = "sopgym.call.arguments.digest"  # of the normalised arguments

# A rejected call, as a span event on the gateway's and the tool service's server spans.
EVENT_TOOL_ERROR = "sopgym.tool.error"
EVENT_ERROR_CODE = "sopgym.error.code"
EVENT_ERROR_FIELD = "sopgym.error.field"
EVENT_ERROR_CLASS = "sopgym.error.class"  # validation | type | other

# Instrumentation scope names, one per component. Tool executions and LLM calls get scopes of
# their own so the evaluator, which needs only the agent's root spans (they carry the
# episode's LLM usage totals) and the gateway's spans, can skip everything else in the trace
# store without parsing it.
SCOPE_AGENT = "sopgym.agents"
SCOPE_AGENT_TOOLS = "sopgym.agents.tools"
SCOPE_AGENT_LLM = "sopgym.agents.llm"
SCOPE_GATEWAY = "sopgym.gateway"
SCOPE_TOOLS = "sopgym.tools"
SCOPE_MODEL = "sopgym.model"
SCOPE_RUNNER = "sopgym.runner"  # the task's root span, with its scored outcome
EVALUATED_SCOPES = frozenset({SCOPE_AGENT, SCOPE_GATEWAY})

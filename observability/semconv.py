"""Span and attribute names: the one vocabulary shared by the processes that emit spans and the
evaluator that reads them back.

Standard names follow the OpenTelemetry GenAI and HTTP semantic conventions; everything the
conventions do not cover (episodes, call records, run ids) lives under ``sopgym.``. Keeping
both sides on these constants is what lets the evaluator rebuild exactly what the gateway
recorded.
"""

from __future__ import annotations

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
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"  # on chat spans: the episode id
ERROR_TYPE = "error.type"
# opt-in capture of message content on chat spans (the GenAI instrumentations' variable)
CAPTURE_MESSAGES_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

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

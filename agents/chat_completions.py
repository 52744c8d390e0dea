"""LangChain's ``ChatOpenAI`` with each message turned into its Chat Completions form once.

Every call of an episode sends the whole conversation again, and LangChain converts every
message of it again (``_convert_message_to_dict``): for an assistant message it walks the
content looking for audio blocks, one ``isinstance`` per *character* when the content is a
string. Over an 8-step episode that was a fifth of an agent worker's CPU per model call against
the scripted model. The conversion depends only on the message, so :class:`ChatCompletionsModel`
keeps each message's converted form per thread and converts only what is new since the last
call; the request is byte for byte LangChain's (a test holds the two to it).

A converted form is reused only for the same message object whose content, extra fields and
tool calls are still the very objects it was converted from, so a message rebuilt or given new
content is converted again. (A list or dict changed in place would not be noticed: nothing in
sopgym changes a message after it is in a conversation, and LangGraph's state reducers replace
messages rather than edit them.)
"""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.globals import get_llm_cache
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import _gen_info_and_msg_metadata
from langchain_core.messages import AIMessage, BaseMessage
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models._compat import _convert_from_v1_to_chat_completions
from langchain_openai.chat_models.base import _convert_message_to_dict

# Converted messages kept per thread: an episode's conversation and then some. A thread that
# runs many episodes (env-serve's pool) clears its memo when it fills, so it never holds more.
MEMO_SIZE = 256
_memo = threading.local()


def chat_completions_message(message: BaseMessage) -> dict[str, Any]:
    """``message`` as LangChain sends it to Chat Completions, converted once per message."""
    memo: dict[int, tuple[Any, ...]] | None = getattr(_memo, "entries", None)
    if memo is None:
        memo = _memo.entries = {}
    tool_calls = getattr(message, "tool_calls", None)
    kept = memo.get(id(message))
    if (
        kept is not None
        and kept[0] is message
        and kept[1] is message.content
        and kept[2] is message.additional_kwargs
        and kept[3] is tool_calls
    ):
        return kept[4]
    if isinstance(message, AIMessage):
        converted = _convert_message_to_dict(_convert_from_v1_to_chat_completions(message))
    else:
        converted = _convert_message_to_dict(message)
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    # the message itself is kept too: while it is here, no other object can take its id
    memo[id(message)] = (message, message.content, message.additional_kwargs, tool_calls,
                         converted)  # fmt: skip
    return converted


def forget_thread() -> None:
    """Drop the calling thread's converted messages (its episode is over)."""
    _memo.entries = {}


class ChatCompletionsModel(ChatOpenAI):
    """``ChatOpenAI`` whose Chat Completions requests convert each message once
    (:func:`chat_completions_message`); the Responses API path is LangChain's own."""

    def reply(self, messages: list[BaseMessage], **call: Any) -> AIMessage | None:
        """The reply ``_generate_with_cache`` would give when no callback handler is set, or
        None where that method has work of its own to do (a cache, a rate limiter, streaming,
        v1 content blocks). It skips only what has nothing to do on our path: the cache and
        limiter checks, and an ``inspect.signature`` of ``_generate`` on every call (~0.05 ms,
        4% of an agent step). The message gets its metadata as that method gives it; a test
        holds the two to the same reply."""
        if (
            (self.cache is not False and (self.cache is not None or get_llm_cache() is not None))
            or self.rate_limiter is not None
            or self.output_version == "v1"
            or self._should_stream(async_api=False, **call)
        ):
            return None
        result = self._generate(messages, **call)
        generation = result.generations[0]
        generation.message.response_metadata = _gen_info_and_msg_metadata(generation)
        if len(result.generations) == 1 and result.llm_output is not None:
            generation.message.response_metadata = {
                **result.llm_output,
                **generation.message.response_metadata,
            }
        return generation.message  # type: ignore[return-value]

    def _get_request_payload(
        self,
        input_: LanguageModelInput,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if self._use_responses_api({**self._default_params, **kwargs}):
            return super()._get_request_payload(input_, stop=stop, **kwargs)
        messages = self._convert_input(input_).to_messages()
        if stop is not None:
            kwargs["stop"] = stop
        payload = {**self._default_params, **kwargs}
        payload["messages"] = [chat_completions_message(m) for m in messages]
        return payload

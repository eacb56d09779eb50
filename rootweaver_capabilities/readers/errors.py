"""The reader's errors; every one carries the :class:`~rootweaver_capabilities.readers.chat.ChatPacket`
that was (or was to be) sent, so nothing is lost when a request fails.

Exception tree (``kind`` is the short name the capability records)::

    LLMError                      base; every instance carries ``packet`` (ChatPacket)
     +-- PromptTooLongError       prompt_too_long: prompt + reserved output > window (not sent)
     +-- LLMUnavailableError      unavailable: retries exhausted (timeouts, connection errors, 5xx, 429)
     |    +-- LLMDeadlineError    deadline: the request's wall-clock deadline passed
     +-- LLMRequestError          refused: the server refused the request (4xx other than 429)
     +-- LLMResponseError         bad_response: HTTP 200 but not an OpenAI chat completion
          +-- LLMNullContentError  null_content: a chat completion whose message content is null
          +-- LLMReplyTooLargeError reply_too_large: the (decompressed) reply passed ``max_reply_bytes``
"""

from __future__ import annotations

from collections.abc import Sequence

from rootweaver_capabilities.readers.chat import ChatPacket

__all__ = [
    "LLMDeadlineError",
    "LLMError",
    "LLMNullContentError",
    "LLMReplyTooLargeError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMUnavailableError",
    "PromptTooLongError",
]


class LLMError(RuntimeError):
    """Base of the client's errors; ``packet`` is the request that was (to be) sent."""

    kind = "error"

    def __init__(self, message: str, packet: ChatPacket):
        super().__init__(message)
        self.packet = packet


class PromptTooLongError(LLMError):
    """The prompt does not fit; raised before any network call."""

    kind = "prompt_too_long"

    def __init__(self, packet: ChatPacket, context_window: int, reserved_output: int):
        super().__init__(
            f"prompt has {packet.prompt_tokens} tokens; with {reserved_output} output tokens reserved "
            f"the context window of {context_window} allows at most {context_window - reserved_output}",
            packet,
        )
        self.prompt_tokens = packet.prompt_tokens
        self.context_window = context_window
        self.reserved_output = reserved_output


class LLMUnavailableError(LLMError):
    """Every attempt failed with a retryable error; ``errors`` lists one line per attempt."""

    kind = "unavailable"

    def __init__(self, packet: ChatPacket, attempts: int, errors: Sequence[str]):
        super().__init__(f"LLM unavailable after {attempts} attempt(s): {errors[-1] if errors else 'no attempt'}",
                         packet)
        self.attempts = attempts
        self.errors = tuple(errors)


class LLMDeadlineError(LLMUnavailableError):
    """The request's wall-clock deadline passed (``attempts`` made so far, possibly 0)."""

    kind = "deadline"

    def __init__(self, packet: ChatPacket, attempts: int, errors: Sequence[str], deadline_s: float):
        super().__init__(packet, attempts, [*errors, f"deadline of {deadline_s:g} s passed"])
        self.deadline_s = deadline_s


class LLMRequestError(LLMError):
    """The server answered 4xx (not 429): retrying the same packet cannot help."""

    kind = "refused"

    def __init__(self, packet: ChatPacket, status: int, detail: str):
        super().__init__(f"server refused the request with HTTP {status}: {detail}", packet)
        self.status = status
        self.detail = detail


class LLMResponseError(LLMError):
    """HTTP 200 whose body is not a chat completion."""

    kind = "bad_response"


class LLMNullContentError(LLMResponseError):
    """A chat completion whose ``message.content`` is ``null`` (no answer at all, which an
    empty string would hide)."""

    kind = "null_content"


class LLMReplyTooLargeError(LLMResponseError):
    """The reply body, decompressed, passed the client's ``max_reply_bytes``; reading stopped
    there (a gzip bomb is refused at the cap, not inflated)."""

    kind = "reply_too_large"


"""The LLM synthesizer: the multi-hop loop's ``Synthesizer`` through a chat client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rootweaver_innovations.answer_rules.extractive import extractive_answer, load_extractive
from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.compaction.line import CompactionRequest
from rootweaver_innovations.compaction.strategies import DEFAULT_STRATEGY, Compactor, make_compactor
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.loop.result import ABSTAINED, INSUFFICIENT_INFORMATION

from rootweaver_capabilities.readers.chat import ChatClient, ChatPacket
from rootweaver_capabilities.readers.deadline import request_deadline
from rootweaver_capabilities.readers.errors import LLMError, PromptTooLongError
from rootweaver_capabilities.readers.prompts import (
    MODE_EVIDENCE,
    MODES,
    NumberedContext,
    ReaderAnswer,
    answer_only_messages,
    ask_with_evidence,
    evidence_messages,
    is_refusal,
    number_facts,
    parse_answer_only,
)

__all__ = ["LLMSynthesizer"]


_SHRINK_ROUNDS = 6
_REFUSED = f"{ABSTAINED} (the reader found no answer)"


@dataclass(frozen=True)
class LLMSynthesizer:
    """MultiHopRAG ``Synthesizer`` through a chat client (HTTP or embedded: same prompt,
    same parsing, same window check). Stateless, so one instance serves every thread.

    ``mode="answer"``: answer-only prompt over the synth context's text, no citations.
    ``mode="evidence"``: the synth context's facts numbered
    (:func:`~rootweaver_capabilities.readers.prompts.number_facts`), a JSON ``{"answer", "evidence"}``
    reply (retried once when malformed, then returned with ``method`` ending in
    ``(malformed reply)`` and the raw reply as text); ``citations`` are the cited facts.

    Fitting: the prompt is counted with the reader's tokenizer; when it does not fit
    ``context_window - max_tokens`` the synth context is compacted again by ``compactor`` (the
    configured strategy; the default strategy when none is given) under a token budget scaled
    by the overflow, until it fits. A prompt that cannot fit even with an empty context is not sent.
    A choice question's two options are named in the prompt as ``conventions`` read them (the
    default member when ``None``).

    Every call runs under one deadline of ``client.timeout_s`` (counting, the evidence
    retry and every attempt included). Any :class:`LLMError` degrades the call to
    :func:`extractive_answer`, labelled ``extractive (reader failed: <kind>)``, with the
    error kind and scrubbed message in the returned :class:`ReaderAnswer`; other
    exceptions (bugs) propagate.

    Saying "not in the documents": an empty synth context is answered
    :data:`~rootweaver_innovations.loop.result.INSUFFICIENT_INFORMATION` with method
    ``abstained (nothing read)`` without asking the reader; a reader's refusal (:func:`is_refusal`),
    which the prompts invite when the context does not contain the answer, with method
    ``abstained (the reader found no answer)``.
    """

    client: ChatClient
    mode: str = MODE_EVIDENCE
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int | None = None
    json_mode: bool = False
    compactor: Compactor | None = None
    conventions: Conventions | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, got {self.mode!r}")
        if self.compactor is None:
            object.__setattr__(self, "compactor", make_compactor(DEFAULT_STRATEGY))

    def load(self) -> None:
        """Load the reader now (tokenizer, embedded model) and its extractive fallback,
        instead of in the first request."""
        self.client.load()
        load_extractive()

    @property
    def reader(self) -> str:
        return f"{self.client.transport}:{self.client.model}"

    def _messages(self, question: str, context: SynthContext) -> tuple[list[dict[str, str]], NumberedContext | None]:
        if self.mode == MODE_EVIDENCE:
            numbered = number_facts(context)
            return evidence_messages(question, numbered, self.conventions), numbered
        return answer_only_messages(question, context, self.conventions), None

    def fit(self, question: str, context: SynthContext) -> tuple[SynthContext, int]:
        """``(context, prompt_tokens)``: the synth context compacted again until the prompt fits
        the reader's window with the output reserved; raises :class:`PromptTooLongError`
        (built from the smallest prompt tried) when even an empty context does not fit."""
        out = self.client.max_tokens if self.max_tokens is None else self.max_tokens
        allowed = self.client.context_window - out
        empty = context.with_facts((), context.layout)
        overhead: int | None = None
        for _ in range(_SHRINK_ROUNDS):
            tokens = self.client.count_prompt_tokens(self._messages(question, context)[0])
            if tokens <= allowed:
                return context, tokens
            if overhead is None:
                overhead = self.client.count_prompt_tokens(self._messages(question, empty)[0])
            room = allowed - overhead
            if room <= 0 or not context.facts:
                break
            context_tokens = Budget(1, "tokens").measure(context.text)  # the unit's tokenizer, as compaction counts
            target = int(context_tokens * room / max(tokens - overhead, 1) * 0.9)
            if target < 1:
                context = empty
                continue
            request = CompactionRequest.of_context(question, context, Budget(target, "tokens"))
            context = self.compactor(request).context
        shown = empty if overhead is not None and overhead > allowed else context
        messages, _ = self._messages(question, shown)
        packet = ChatPacket("", {"model": self.client.model, "messages": messages},
                            self.client.count_prompt_tokens(messages))
        raise PromptTooLongError(packet, self.client.context_window, out)

    def _complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        try:
            return self.client.chat(
                messages, temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed,
                json_mode=self.json_mode,
            ).text
        except PromptTooLongError:
            if len(messages) > 2:  # the evidence correction turn does not fit: the first reply stays malformed
                return ""
            raise

    def __call__(self, question: str, context: SynthContext) -> ReaderAnswer:
        tag = f"{self.reader}:{self.mode}"
        tokens: int | None = None
        given = context
        if not any(f.body for f in context.facts):
            return ReaderAnswer(text=INSUFFICIENT_INFORMATION, method=f"{ABSTAINED} (nothing read)", reader=self.reader)
        try:
            with request_deadline(self.client.timeout_s):
                context, tokens = self.fit(question, context)
                common = dict(reader=self.reader, prompt_tokens=tokens, context_chars=len(context.text))
                messages, numbered = self._messages(question, context)
                if numbered is not None:
                    outcome = ask_with_evidence(self._complete, question, numbered, self.conventions)
                    if outcome.malformed:
                        last = next((r.strip() for r in reversed(outcome.replies) if r.strip()), "")
                        return ReaderAnswer(text=last, method=f"{tag} (malformed reply)", **common)
                    if is_refusal(outcome.answer):
                        return ReaderAnswer(text=INSUFFICIENT_INFORMATION, method=_REFUSED, **common)
                    return ReaderAnswer(text=outcome.answer, citations=numbered.cited(outcome.evidence),
                                        method=tag, **common)
                text = parse_answer_only(self._complete(messages))
                if is_refusal(text):
                    return ReaderAnswer(text=INSUFFICIENT_INFORMATION, method=_REFUSED, **common)
                return ReaderAnswer(text=text, method=tag, **common)
        except LLMError as exc:
            fallback = extractive_answer(question, given.facts, self.conventions)
            return ReaderAnswer(
                text=fallback.text, citations=fallback.citations,
                method=f"extractive (reader failed: {exc.kind})", reader=self.reader, error_kind=exc.kind,
                error=" ".join(str(exc).split())[:300], prompt_tokens=tokens, context_chars=len(context.text),
            )

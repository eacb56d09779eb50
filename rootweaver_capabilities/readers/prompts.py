"""Reader prompts (answer-only and evidence-based) and robust reply parsing.

Evidence-based generation (EBG) numbers the context's fact lines ``i: <line>`` (hop
headers stay unnumbered: they are structure and must not be cited) and asks for a JSON
object ``{"answer": ..., "evidence": [line ids]}``. A malformed reply is retried once
with a corrective turn, then reported as malformed (never dropped). Both prompts name the
two options of a choice question ("..., A or B?") after the question. Scoring replies
against gold labels (Ans / Evid / Joint, the judge) lives in :mod:`evals.scoring`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.compaction.synth_context import SynthContext
from rootweaver_innovations.loop.multihop import Answer
from rootweaver_innovations.loop.result import INSUFFICIENT_INFORMATION
from rootweaver_innovations.records import Fact

__all__ = [
    "EvidenceOutcome",
    "EvidenceReply",
    "MODES",
    "MODE_ANSWER",
    "MODE_EVIDENCE",
    "MalformedReplyError",
    "NumberedContext",
    "ReaderAnswer",
    "answer_only_messages",
    "ask_with_evidence",
    "evidence_messages",
    "is_refusal",
    "number_facts",
    "parse_answer_only",
    "parse_evidence_reply",
]

MODE_ANSWER = "answer"
MODE_EVIDENCE = "evidence"
MODES = frozenset({MODE_ANSWER, MODE_EVIDENCE})

ANSWER_SYSTEM = (
    "You answer questions using only the given context. Reply with the shortest possible "
    "answer: a name, a date, a number, a short phrase, or yes/no. No explanation. If the "
    f"context does not contain the answer, reply: {INSUFFICIENT_INFORMATION}"
)
EVIDENCE_SYSTEM = (
    "You answer questions using only the given context. Context lines are numbered as "
    "'N: title | sentence'; lines starting with 'From query:' are not evidence. Reply with "
    'only a JSON object: {"answer": "<shortest possible answer>", "evidence": [<numbers of '
    "every line needed to support the answer>]}. If the context does not contain the answer, "
    f'reply {{"answer": "{INSUFFICIENT_INFORMATION}", "evidence": []}}.'
)
_REFUSAL = re.compile(r"^\W*(?:insufficient information|not enough information|no information|unknown|"
                      r"(?:the )?(?:context|information) (?:does not|doesn't) )", re.IGNORECASE)


def is_refusal(answer: str) -> bool:
    """Whether a reader's answer says the context does not hold the answer
    (:data:`INSUFFICIENT_INFORMATION`, or the few other ways small readers put it)."""
    return bool(_REFUSAL.match(answer))
CORRECTION = (
    'Your reply was not a valid JSON object. Reply with only {"answer": "...", "evidence": [N, ...]}.'
)


@dataclass(frozen=True, slots=True)
class ReaderAnswer(Answer):
    """An :class:`Answer` with this call's own outcome (per call: nothing is shared).

    ``reader`` names the reader asked (``"openai:<model>"`` or ``"local:<model>"``);
    ``prompt_tokens`` is the counted prompt (``None`` when counting failed);
    ``context_chars`` the synth context actually sent (less than the input when it was
    shrunk to fit the window). On a failed call ``error_kind`` is the error's ``kind``
    (``unavailable``, ``deadline``, ``refused``, ``bad_response``, ``prompt_too_long``),
    ``error`` its scrubbed one-line message, and the answer is the extractive one.
    """

    reader: str = ""
    error_kind: str = ""
    error: str = ""
    prompt_tokens: int | None = None
    context_chars: int = 0


@dataclass(frozen=True, slots=True)
class NumberedContext:
    """A synth context's facts numbered from 1 as the reader sees them; ``facts[i - 1]`` is line ``i``."""

    text: str
    facts: tuple[Fact, ...]

    def cited(self, ids: Sequence[int]) -> tuple[Fact, ...]:
        """The facts for ``ids`` in citation order; unknown ids and repeats skipped."""
        seen: set[int] = set()
        out = []
        for i in ids:
            if 1 <= i <= len(self.facts) and i not in seen:
                seen.add(i)
                out.append(self.facts[i - 1])
        return tuple(out)


def number_facts(context: SynthContext) -> NumberedContext:
    """The context's fact lines numbered from 1, one per line (``N: <title> | <sentence>``),
    facts with a blank sentence left out and no hop headers: evidence mode's view of the
    synth context, rendered from its facts."""
    facts = tuple(f for f in context.facts if f.body)
    return NumberedContext("\n".join(f"{i}: {f.line}" for i, f in enumerate(facts, start=1)), facts)


def _ask(question: str, conventions: Conventions | None) -> str:
    """The question line, and for a choice question (``conventions.choice_options``, the
    default member's when ``None``) a line naming its two options: without it the small reader
    sometimes answers with neither."""
    options = (conventions or default_conventions()).choice_options(question)
    hint = f"\nThe answer is one of: {options[0]}; {options[1]}." if options else ""
    return f"Question: {question}{hint}"


def answer_only_messages(question: str, context: SynthContext,
                         conventions: Conventions | None = None) -> list[dict[str, str]]:
    """Answer mode's prompt: the synth context's text as rendered (hop headers included)."""
    return [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": f"Context:\n{context.text}\n\n{_ask(question, conventions)}\nAnswer:"},
    ]


def evidence_messages(question: str, numbered: NumberedContext,
                      conventions: Conventions | None = None) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": EVIDENCE_SYSTEM},
        {"role": "user", "content": f"Context:\n{numbered.text}\n\n{_ask(question, conventions)}\nJSON:"},
    ]


_ANSWER_PREFIX = re.compile(r"^\s*(?:final\s+)?answer\s*[:\-]\s*", re.IGNORECASE)


def parse_answer_only(reply: str) -> str:
    """First non-empty line of the reply without an ``Answer:`` prefix or wrapping quotes."""
    for line in reply.strip().split("\n"):
        line = _ANSWER_PREFIX.sub("", line).strip().strip('"').strip()
        if line:
            return line
    return ""


@dataclass(frozen=True, slots=True)
class EvidenceReply:
    answer: str
    evidence: tuple[int, ...]


class MalformedReplyError(ValueError):
    """The reply holds no JSON object with ``answer`` and ``evidence``; ``reply`` is kept."""

    def __init__(self, reason: str, reply: str):
        super().__init__(f"{reason}: {reply[:200]!r}")
        self.reply = reply


_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.DOTALL)
# A reply cut off by the output-token limit inside its evidence list: the answer is whole.
_CUT_REPLY = re.compile(r'\{\s*"answer"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"evidence"\s*:\s*\[([^\]]*)$')
_ID = re.compile(r"^\s*(?:line\s*|l)?\[?\s*(\d+)\s*\]?\s*$", re.IGNORECASE)


def _first_json_object(text: str) -> Mapping[str, object] | None:
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _to_id(item: object) -> int | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, int):
        return item
    if isinstance(item, float) and item.is_integer():
        return int(item)
    if isinstance(item, str):
        m = _ID.match(item)
        return int(m.group(1)) if m else None
    return None


def _cut_reply(reply: str) -> EvidenceReply | None:
    """The answer and the ids written in full of a reply that ends inside its evidence list
    (``{"answer": "x", "evidence": [1, 4,``); ``None`` for any other shape."""
    m = _CUT_REPLY.search(reply.rstrip())
    if m is None:
        return None
    try:
        answer = json.loads(m.group(1))
    except ValueError:  # an escape JSON does not know, e.g. "\x"
        return None
    *whole, _last = m.group(2).split(",")  # the last item may itself be cut ("4" of "45")
    ids = [_to_id(item.strip().strip('"')) for item in whole]
    if any(i is None for i in ids):
        return None
    return EvidenceReply(answer.strip(), tuple(i for i in ids if i is not None))


def parse_evidence_reply(reply: str) -> EvidenceReply:
    """Parse an EBG reply; raises :class:`MalformedReplyError`.

    Tolerated: code fences, text around the object (the first JSON object wins, fenced
    content first), ids as ints or strings (``3``, ``"3"``, ``"line 3"``, ``"[3]"``), a
    single id instead of a list, a numeric answer, and a reply cut off by the token limit
    inside its evidence list (the ids written in full are kept). Not tolerated: no
    object, no ``answer``, no ``evidence``, or an evidence item that is not an id.
    """
    fenced = _FENCE.findall(reply)
    obj = None
    for candidate in [*fenced, reply]:
        obj = _first_json_object(candidate)
        if obj is not None:
            break
    if obj is None or "answer" not in obj or "evidence" not in obj:
        cut = _cut_reply(reply)  # a cut reply's only whole object may be one inside its answer ("{}")
        if cut is not None:
            return cut
        raise MalformedReplyError("no JSON object" if obj is None else "JSON object lacks 'answer' or 'evidence'", reply)
    answer = obj["answer"]
    if isinstance(answer, bool):
        answer = "yes" if answer else "no"
    if not isinstance(answer, str | int | float):
        raise MalformedReplyError("'answer' is not a string", reply)
    raw = obj["evidence"]
    items = raw if isinstance(raw, list) else [raw]
    ids = []
    for item in items:
        i = _to_id(item)
        if i is None:
            raise MalformedReplyError(f"evidence item {item!r} is not a line id", reply)
        ids.append(i)
    return EvidenceReply(str(answer).strip(), tuple(ids))


@dataclass(frozen=True, slots=True)
class EvidenceOutcome:
    """The parsed answer and ids (empty when malformed) and every raw reply received."""

    answer: str
    evidence: tuple[int, ...]
    replies: tuple[str, ...]
    malformed: bool


def ask_with_evidence(
    complete: Callable[[list[dict[str, str]]], str], question: str, numbered: NumberedContext,
    conventions: Conventions | None = None,
) -> EvidenceOutcome:
    """Ask once; on a malformed reply ask again with the reply and a correction appended.

    ``complete`` maps messages to the reply text (errors from it propagate).
    """
    messages = evidence_messages(question, numbered, conventions)
    first = complete(messages)
    try:
        parsed = parse_evidence_reply(first)
        return EvidenceOutcome(parsed.answer, parsed.evidence, (first,), malformed=False)
    except MalformedReplyError:
        pass
    retry = [*messages, {"role": "assistant", "content": first}, {"role": "user", "content": CORRECTION}]
    second = complete(retry)
    try:
        parsed = parse_evidence_reply(second)
        return EvidenceOutcome(parsed.answer, parsed.evidence, (first, second), malformed=False)
    except MalformedReplyError:
        return EvidenceOutcome("", (), (first, second), malformed=True)

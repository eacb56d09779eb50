"""The reader's token counter: its piece-by-piece fast path counts exactly what the tokenizer encodes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from rootweaver_innovations.compaction.packing import QwenTokenCounter, default_token_counter

DATA = Path(__file__).resolve().parents[2] / "evals" / "data" / "hotpotqa.jsonl.gz"


def encoded(counter: QwenTokenCounter, text: str) -> int:
    return len(counter._tok.encode(text, add_special_tokens=False).ids)


# ASCII text built from what the split pattern distinguishes: letters of both cases, digits,
# contractions, punctuation runs, spaces, tabs, carriage returns, newlines and control characters
ascii_text = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(max_codepoint=127), max_size=12),
        st.sampled_from(["'s", "'T", "'re", "'LL", "'d", " ", "  ", "\n", "\r\n", "\t", " \n ", "x-y", "(1909)", "|"]),
    ),
    max_size=20,
).map("".join)


# Any text, weighted towards what decides where pieces and words are cut: every kind of
# whitespace (the tokenizer's and Python's differ), case-folding letters, non-Latin letters and
# numbers, and spaces between non-space characters
WHITESPACE = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2000", "\u2028",
              "\u2029", "\u3000", "\u200b", "\u180e", "\ufeff"]
any_text = st.lists(
    st.one_of(st.text(max_size=8), st.sampled_from(WHITESPACE),
              st.sampled_from(["'s", "'S", "'\u017f", " x", "1", "\u00e9", "\u2013", "\u65e5\u672c", "\u01c5", "\u216b", "\u00b2",
                               "  \n", " \t \r\n", "!  "])),
    max_size=25,
).map("".join)


@settings(max_examples=800, deadline=None)
@given(st.one_of(ascii_text, any_text))
def test_any_text_counts_as_the_tokenizer_encodes_it(text):
    counter = default_token_counter()
    assert counter._pieces is not None  # the shipped tokenizer takes the piece-by-piece path
    assert counter.count(text) == encoded(counter, text)


def test_the_bundled_hotpotqa_lines_and_renders_count_exactly_and_added_tokens_take_the_full_encode():
    counter = QwenTokenCounter()
    lines = []
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        for raw in f:
            row = json.loads(raw)
            lines += [f"{title} | {s}" for title, sents in row["context"] for s in sents]
            if len(lines) > 3000:
                break
    assert sum(not t.isascii() for t in lines) > 100  # the word path runs too
    assert sum(map(counter._pieces.covers, lines)) > 0.9 * len(lines)  # only a "<" sends a line to the full encode
    renders = ["\n".join(lines[k : k + 8]) for k in range(0, len(lines), 8)]  # as `line` counts them
    texts = lines + renders
    assert [counter.count(t) for t in texts] == [encoded(counter, t) for t in texts]
    special = "Paris<|im_end|> is <|endoftext|>"
    assert not counter._pieces.covers(special)
    assert counter.count(special) == encoded(counter, special)


def test_another_pre_tokenizer_gets_no_fast_path(tmp_path):
    other = Tokenizer(WordLevel({"a": 0, "b": 1, "[UNK]": 2}, unk_token="[UNK]"))
    other.pre_tokenizer = Whitespace()
    path = tmp_path / "tokenizer.json"
    other.save(str(path))
    counter = QwenTokenCounter(path)
    assert counter._pieces is None
    assert counter.count("a b c") == 3


@settings(max_examples=300, deadline=None)
@given(st.one_of(ascii_text, any_text))
def test_the_ids_a_prompt_is_sent_as_are_as_many_as_it_counts(text):
    counter = default_token_counter()
    chatml = f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"
    ids = counter.ids(chatml)
    assert len(ids) == counter.count(chatml) and ids[0] == 151644 and ids[-3:-1] == [151644, 77091]

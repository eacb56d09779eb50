"""Memos bounded by bytes as well as entries: whatever is put, a memo holds at
most its entries and its estimated bytes, never a key over its length cap, and what it
returns for a key is what was last computed for it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.compaction.packing.candidates import _TEXT_TERMS, text_terms
from rootweaver_innovations.memo import Memo


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.text(max_size=60), max_size=200), max_entries=st.integers(1, 20),
       max_bytes=st.integers(1, 4000), max_key_chars=st.integers(1, 40))
def test_a_memo_never_passes_its_bounds_and_returns_what_was_put(keys, max_entries, max_bytes, max_key_chars):
    memo: Memo[int] = Memo(max_entries=max_entries, max_bytes=max_bytes, max_key_chars=max_key_chars,
                           value_bytes=lambda _v: 28)
    for k in keys:
        assert memo.memoised(k, len) == len(k)
        assert len(memo) <= max_entries and memo.bytes <= max_bytes
        got = memo.get(k)
        assert got is None or got == len(k)
        if len(k) > max_key_chars:
            assert got is None


def test_text_terms_keeps_no_long_text_and_stays_within_its_bytes():
    long_text = " ".join(f"w{i}" for i in range(3000))
    before = len(_TEXT_TERMS)
    assert text_terms(long_text).length == 3000
    assert _TEXT_TERMS.get(long_text) is None and len(_TEXT_TERMS) == before
    for i in range(2000):
        text_terms(f"line {i} " + "word " * 200)
    assert _TEXT_TERMS.bytes <= _TEXT_TERMS.max_bytes and len(_TEXT_TERMS) <= _TEXT_TERMS.max_entries

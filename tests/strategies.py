"""Hypothesis strategies shared by the unit tests (one place, as attrs does).

Instances are small on purpose: property tests run 1000+ examples in seconds.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from rootweaver_innovations.compaction.packing import Budget, Candidate

WORDS = (
    "alpha", "beta", "gamma", "delta", "river", "born", "film", "director", "Paris",
    "1923", "the", "and", "x", "capital", "city", "song",
)
DOCS = ("A", "B", "C", "D")

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
queries = st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join)
relevances = st.integers(min_value=0, max_value=8).map(lambda k: k / 4)


@st.composite
def candidate_lists(draw, min_size: int = 0, max_size: int = 8, *, versions: bool = False):
    """Candidates with unique ids ``c0..``, small vocabulary (text repeats happen), few docs.

    With ``versions`` some candidates carry a version label ``v1``/``v2`` of their doc.
    """
    n = draw(st.integers(min_value=min_size, max_value=max_size))
    out = []
    for i in range(n):
        version = draw(st.sampled_from((None, None, "v1", "v2"))) if versions else None
        out.append(Candidate(f"c{i}", draw(st.sampled_from(DOCS)), draw(words), i, draw(relevances), version))
    return out


def char_budgets(max_limit: int = 120):
    return st.integers(min_value=1, max_value=max_limit).map(Budget.chars)


def token_budgets(max_limit: int = 30):
    """Token budgets counted by the default (Qwen2.5) tokenizer."""
    return st.integers(min_value=1, max_value=max_limit).map(Budget.tokens)


budgets = st.one_of(char_budgets(), token_budgets())


@st.composite
def objective_inputs(draw, min_n: int = 1, max_n: int = 8):
    """Arrays for :class:`SubmodularObjective`: ``(relevance, incidence, similarity, doc_index)``.

    Values come from coarse grids so ties (equal gains, equal ratios) are common.
    """
    n = draw(st.integers(min_value=min_n, max_value=max_n))
    t = draw(st.integers(min_value=0, max_value=4))
    rel = np.array(draw(st.lists(relevances, min_size=n, max_size=n)), dtype=np.float64)
    inc = np.array(draw(st.lists(st.booleans(), min_size=n * t, max_size=n * t)), dtype=bool).reshape(n, t)
    pairs = n * (n - 1) // 2
    upper = draw(st.lists(st.integers(min_value=0, max_value=4), min_size=pairs, max_size=pairs))
    sim = np.eye(n)
    rows, cols = np.triu_indices(n, 1)
    sim[rows, cols] = sim[cols, rows] = np.array(upper, dtype=np.float64) / 4
    docs = np.array(draw(st.lists(st.integers(min_value=0, max_value=2), min_size=n, max_size=n)), dtype=np.int64)
    return rel, inc, sim, docs


@st.composite
def nested_sets(draw, n: int):
    """``(A, B, x)`` with A a subset of B and x outside B, as index lists over ``range(n)`` (n >= 1)."""
    x = draw(st.integers(min_value=0, max_value=n - 1))
    rest = [i for i in range(n) if i != x]
    b = draw(st.lists(st.sampled_from(rest), unique=True)) if rest else []
    a = [i for i in b if draw(st.booleans())]
    return a, b, x


TITLES = ("Jaws", "Steven Spielberg", "Paris", "Alpha River", "Delta (film)")


@st.composite
def compaction_requests(draw, max_facts: int = 14):
    """A :class:`CompactionRequest` as the loop would hand it: 1-3 hops of facts from a few
    passages (titles repeat across passages, sentences repeat too), a question, open terms and
    a char or token budget."""
    from rootweaver_innovations.compaction.line import CompactionRequest
    from rootweaver_innovations.compaction.synth_context import SynthContext
    from rootweaver_innovations.records import Fact

    n_hops = draw(st.integers(min_value=1, max_value=3))
    hop_queries = tuple(draw(words) for _ in range(n_hops))
    facts = []
    n = draw(st.integers(min_value=0, max_value=max_facts))
    passage = 0
    for hop in range(n_hops):
        for _ in range(n // n_hops):
            if not facts or draw(st.booleans()):
                passage += 1
                index = 0
            title = TITLES[passage % len(TITLES)]
            facts.append(Fact(f"p{passage}", title, draw(words), index, hop, hop_queries[hop], passage % 3, 1.0))
            index += 1
    question = draw(queries)
    open_terms = tuple(draw(st.lists(st.sampled_from(WORDS), max_size=3)))
    return CompactionRequest(question, SynthContext(tuple(facts), hop_queries), open_terms, draw(budgets))


# Hostile input for the loaders and the config (tests/cli/test_hostile_input.py).

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


def deep_nesting(opener: str, closer: str = "", max_depth: int = 20_000):
    """``opener`` repeated 50..max_depth times (then ``closer`` as often): nesting past any limit."""
    return st.integers(50, max_depth).map(lambda n: opener * n + closer * n)


def _knob_paths() -> list[tuple[str, ...]]:
    from rootweaver_capabilities.config import knob_reference

    return [tuple(k.key.split(".")) for k in knob_reference()]


@st.composite
def config_mappings(draw):
    """A nested config mapping: a few real knob paths (and sometimes an unknown one) set to
    arbitrary JSON-like values, nulls included."""
    out: dict = {}
    paths = _knob_paths() + [("nope",), ("llm", "nope")]
    for path in draw(st.lists(st.sampled_from(paths), min_size=1, max_size=4)):
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[path[-1]] = draw(json_values)
    return out


ALIAS_BOMB = "".join(
    ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n']
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)]
    + [f"max_hops: [{', '.join(['*a8'] * 9)}]\n"]
)

config_texts = st.one_of(
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),  # arbitrary characters
    st.text(alphabet=":-[]{}&*!|>'\"#%@` \n\tabc01", max_size=120),  # YAML punctuation soup
    deep_nesting("a: [", max_depth=5000),  # within the config size limit: reaches the depth guard
    deep_nesting("- ", max_depth=5000),
    st.integers(1, 5).map(lambda n: "\n".join(" " * i + "k:" for i in range(n * 40))),
    st.just(ALIAS_BOMB),
)


@st.composite
def qa_rows_with_a_hole(draw):
    """A valid HotpotQA-layout row with one field (or one nested field) replaced by null or
    another JSON value, as a dict ready to be written as a JSONL line."""
    row = {
        "_id": "q1", "type": "bridge", "question": "Who directed the film?", "answer": "Ann",
        "supporting_facts": [["A", 0], ["B", 0]], "supporting_titles": ["A", "B"],
        "context": [["A", ["A is a film.", "It was long."]], ["B", ["Ann directed A."]]],
    }
    slots = [
        (k,) for k in row
    ] + [("context", 0), ("context", 0, 0), ("context", 0, 1), ("context", 0, 1, 0),
         ("supporting_facts", 0), ("supporting_facts", 0, 1), ("supporting_titles", 1)]
    slot = draw(st.sampled_from(slots))
    node = row
    for part in slot[:-1]:
        node = node[part]
    node[slot[-1]] = draw(st.one_of(st.none(), json_values))
    return row

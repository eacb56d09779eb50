"""The conventions seam: a registry of members, what each answers, and an index that names the
conventions and the code that built it (refused, in one line, by other code or other conventions)."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import (
    CONVENTIONS,
    conventions_names,
    default_conventions,
    get_conventions,
    register_conventions,
)
from rootweaver_innovations.defaults import BUILTIN_CONVENTIONS, DEFAULT_CONVENTIONS
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.fingerprint import _module_code, code_fingerprint
from rootweaver_innovations.retrieval.titles import TitleIndex, passage_keys
from rootweaver_innovations.retrieval.index import IndexFormatError, build_index, open_index

WIKIPEDIA, PLAIN = get_conventions("wikipedia"), get_conventions("plain")
LEAD = "Harvey Lawrence Pekar (October 8, 1939 - July 12, 2010) was an American comic book writer."


def test_the_built_in_members_are_registered_in_order_and_satisfy_the_protocol():
    assert conventions_names()[:2] == BUILTIN_CONVENTIONS == ("wikipedia", "plain")
    assert default_conventions() is get_conventions(DEFAULT_CONVENTIONS)
    assert all(isinstance(c, Conventions) for c in CONVENTIONS.values())


def test_an_unknown_name_and_a_taken_name_are_refused_with_the_choices():
    with pytest.raises(ValueError, match=r"unknown conventions 'news'; choose from \['plain', 'wikipedia'\]"):
        get_conventions("news")
    with pytest.raises(ValueError, match="conventions 'plain' is already registered"):
        register_conventions(PLAIN)
    with pytest.raises(ValueError, match="conventions must provide"):
        register_conventions(object())  # type: ignore[arg-type]


def test_wikipedia_reads_lead_subjects_name_forms_and_comparisons():
    assert WIKIPEDIA.lead_subject(LEAD) == "Harvey Pekar"
    names = WIKIPEDIA.subject_names("Michael Kevin Taylor (born 1960) was a player.")
    assert names[:2] == ("Michael Taylor", "Michael Kevin Taylor") and "Mick Taylor" in names
    assert WIKIPEDIA.compared_entities("Who was born first, Harvey Pekar or Denise Levertov?") == (
        "Harvey Pekar", "Denise Levertov")
    assert WIKIPEDIA.choice_options("Which is older, Dune or Emma?") == ("Dune", "Emma")
    assert WIKIPEDIA.usual_name(LEAD, lambda n: 3 if n == "Harvey Lawrence Pekar" else 0) == "Harvey Lawrence Pekar"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=120))
def test_plain_reads_nothing_into_any_text(text):
    assert PLAIN.lead_subject(text) is None and PLAIN.subject_names(text) == ()
    assert PLAIN.usual_name(text, len) is None
    assert PLAIN.compared_entities(text) is None and PLAIN.choice_options(text) is None


def test_plain_keys_an_id_titled_record_by_its_title_alone():
    p = Passage("p1", "doc-17.txt", (LEAD,))
    assert passage_keys(p, PLAIN) == ("doc 17 txt",)
    assert "harvey pekar" in passage_keys(p, WIKIPEDIA)
    assert TitleIndex([p], conventions=PLAIN).pages("harvey pekar") == ()


def test_fingerprints_are_stable_and_tell_members_apart():
    assert WIKIPEDIA.fingerprint() == WIKIPEDIA.fingerprint() != PLAIN.fingerprint()
    assert len(WIKIPEDIA.fingerprint()) == 64
    with pytest.raises(ValueError, match="no Python source for module 'sys'"):
        code_fingerprint(["sys"])


def test_a_docstring_or_comment_does_not_change_a_fingerprint_but_code_does(tmp_path, monkeypatch):
    module = tmp_path / "fp_probe.py"
    monkeypatch.syspath_prepend(str(tmp_path))
    versions = ['"""One."""\nX = 1\n', '"""Two, reworded."""\nX = 1  # a comment\n', '"""Two."""\nX = 2\n']
    prints = []
    for source in versions:
        module.write_text(source)
        _module_code.cache_clear()
        prints.append(code_fingerprint(["fp_probe"]))
    assert prints[0] == prints[1] != prints[2]


def test_an_index_records_its_conventions_and_is_refused_under_others(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "title": "doc-1.txt", "text": "Ernst Mach was a physicist."}\n')
    manifest = build_index(corpus, tmp_path / "idx", conventions=PLAIN)
    assert manifest.conventions["name"] == "plain" and len(manifest.conventions["fingerprint"]) == 64
    index = open_index(tmp_path / "idx")
    assert index.titles.conventions is PLAIN and index.retriever().conventions is PLAIN
    with pytest.raises(IndexFormatError, match=r"idx: index built with conventions 'plain', asked with 'wikipedia'; "
                                               r"ask with --conventions plain or rebuild it with --conventions wikipedia"):
        open_index(tmp_path / "idx", conventions="wikipedia")


def test_an_index_built_by_other_convention_code_is_refused(tmp_path, monkeypatch):
    """A member whose code changes after the build: the old index is refused, naming both fingerprints."""
    module = tmp_path / "probe_conventions.py"
    source = textwrap.dedent('''
        from dataclasses import dataclass

        from rootweaver_innovations.conventions.plain import Plain
        from rootweaver_innovations.fingerprint import code_fingerprint


        @dataclass(frozen=True, slots=True)
        class Probe(Plain):
            name: str = "probe"

            def lead_subject(self, sentence):
                return sentence.split()[0] if sentence.split() else None

            def fingerprint(self):
                return code_fingerprint([__name__])
        ''')
    module.write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = importlib.import_module("probe_conventions").Probe()
    monkeypatch.setitem(CONVENTIONS, "probe", probe)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "title": "doc-1.txt", "text": "Ernst Mach was a physicist."}\n')
    build_index(corpus, tmp_path / "idx", conventions=probe)
    assert open_index(tmp_path / "idx").retriever().conventions is probe
    module.write_text(source.replace("split()[0]", "split()[-1]"))  # one rule changes
    _module_code.cache_clear()
    try:
        with pytest.raises(IndexFormatError, match=r"idx: index fingerprint [0-9a-f]{12}, this rootweaver's "
                                                   r"[0-9a-f]{12} \(the code that decides index tokens and keys "
                                                   r"changed\); rebuild it"):
            open_index(tmp_path / "idx")
    finally:
        _module_code.cache_clear()
        sys.modules.pop("probe_conventions", None)


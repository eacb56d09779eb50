"""`--conventions` on the command line: an index records the conventions it was built under, `ask`
takes them from the index, and asking with others is one line on stderr and exit 2."""

from __future__ import annotations

import json

import pytest

from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.config import MultiHopConfig

QUESTION = "Who was born first, Harvey Pekar or Denise Levertov?"


def _corpus(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in (
        {"id": "a", "title": "doc-1.txt", "text": "Harvey Lawrence Pekar (October 8, 1939 - 2010) was a writer."},
        {"id": "b", "title": "doc-2.txt", "text": "Priscilla Denise Levertov (24 October 1923 - 1997) was a poet."},
    )))
    return corpus


def test_an_index_built_plain_is_asked_plain_and_refused_as_wikipedia(tmp_path, capsys):
    out = tmp_path / "idx"
    assert main(["index", "build", str(_corpus(tmp_path)), "--out", str(out), "--conventions", "plain"]) == 0
    assert "(conventions plain)" in capsys.readouterr().out
    assert main(["index", "info", str(out)]) == 0
    assert "conventions: plain  fingerprint " in capsys.readouterr().out
    assert main(["ask", QUESTION, "--index", str(out), "--json", "--reader", "none"]) == 0
    hops = json.loads(capsys.readouterr().out)["hops"]
    assert hops[0]["reason"] == "question" and all(h["reason"] for h in hops)  # why each hop was taken
    assert main(["ask", QUESTION, "--index", str(out), "--json", "--reader", "none", "--conventions", "wikipedia"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "index built with conventions 'plain', asked with 'wikipedia'" in err[0]


def test_an_unknown_conventions_name_is_a_usage_error(capsys):
    with pytest.raises(SystemExit, match="^2$"):
        main(["ask", QUESTION, "--conventions", "news"])
    assert "invalid choice: 'news' (choose from 'wikipedia', 'plain')" in capsys.readouterr().err


def test_the_config_key_takes_a_registered_name_or_null():
    assert MultiHopConfig().conventions is None
    assert MultiHopConfig.from_mapping({"conventions": "plain"}).conventions == "plain"
    with pytest.raises(ValueError, match=r"c\.yaml: key 'conventions' .*'news'"):
        MultiHopConfig.from_mapping({"conventions": "news"}, source="c.yaml")


def test_the_readers_prompt_names_a_choice_questions_options_only_under_wikipedia():
    from rootweaver_capabilities.readers.prompts import answer_only_messages
    from rootweaver_innovations.compaction.synth_context import SynthContext
    from rootweaver_innovations.conventions.registry import get_conventions

    question, context = "Which is older, Dune or Emma?", SynthContext((), ())
    shown = {name: answer_only_messages(question, context, get_conventions(name))[-1]["content"]
             for name in ("wikipedia", "plain")}
    assert "The answer is one of: Dune; Emma." in shown["wikipedia"]
    assert "The answer is one of" not in shown["plain"]

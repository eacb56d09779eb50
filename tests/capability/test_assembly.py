"""One assembly: ``build_rag(config)`` is what ``ask``, ``serve`` and the capability run, and a
new compaction strategy or answer rule is one registration plus one config name."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rootweaver_capabilities.assembly import build_rag
from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.defaults import DEFAULT_BUDGET_TOKENS, TAGGED_BUDGET_TOKENS
from rootweaver_capabilities.capability import MultiHopCapability, RequestContext
from rootweaver_capabilities.cli.main import main
from rootweaver_capabilities.config import ConfigError, MultiHopConfig
from rootweaver_capabilities.result_json import result_record
from rootweaver_innovations.answer_rules import registry as answer_rules
from rootweaver_innovations.compaction import strategies
from rootweaver_innovations.compaction.line import CompactionResult, DroppedFact
from rootweaver_innovations.answer_rules.extractive import extractive_synthesizer
from rootweaver_innovations.loop.multihop import Answer


class FirstFactOnly:
    """A strategy in the shape of a plug-in module: keep the first fact, drop the rest."""

    def __call__(self, request):
        kept = request.context.with_facts(request.facts[:1], "facts")
        dropped = tuple(DroppedFact(i, f, "not_selected") for i, f in enumerate(request.facts) if i)
        return CompactionResult(kept, dropped, request.context, request.budget, request.budget.measure(kept.text),
                                "first_fact")


def always_forty_two(question, facts):
    """An answer rule in the shape of a plug-in module: answers every question, citing one fact."""
    return Answer("42", tuple(facts[:1]), "computed: always 42")


@pytest.fixture
def plugins():
    strategies.register_strategy("first_fact", FirstFactOnly)
    answer_rules.register_answer_rule("forty_two", always_forty_two)
    yield
    del strategies.STRATEGIES["first_fact"], answer_rules.ANSWER_RULES["forty_two"]


def test_a_registered_strategy_and_answer_rule_are_one_config_name_away(plugins, demo_retriever, golden_questions):
    config = MultiHopConfig.from_mapping({"compaction": {"strategy": "first_fact"}, "answer_rules": ["forty_two"]})
    rag = build_rag(config, retriever=demo_retriever)
    result = rag.multi_hop_search(golden_questions[0].question)
    assert result.compaction.strategy == "first_fact" and result.synth.facts == result.facts[:1]
    assert result.answer.text == "42" and result.answer.citations == result.facts[:1]
    record = result_record(result, detail=True)
    assert record["strategy"] == "first_fact" and record["answer"]["cited_lines"] == [result.facts[0].line]


def test_unknown_names_are_config_errors_naming_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=r"answer_rules' names unknown 'nope'; choose from \['date_comparison', 'unknown_source'\]"):
        MultiHopConfig.from_mapping({"answer_rules": ["nope"]}, source="t.yaml")
    with pytest.raises(ConfigError, match="compaction.strategy' must be one of"):
        MultiHopConfig.from_mapping({"compaction": {"strategy": "nope"}}, source="t.yaml")
    with pytest.raises(ConfigError, match="answer_rules' must be a list of names"):
        MultiHopConfig.from_mapping({"answer_rules": ["date_comparison", "date_comparison"]})


def test_the_config_decides_every_part_of_the_loop(demo_retriever):
    config = MultiHopConfig.from_mapping({"max_hops": 3, "max_passages": 7, "answer_rules": [],
                                          "compaction": {"enabled": False, "strategy": "line", "unit": "chars",
                                                         "budget": 500}})
    rag = build_rag(config, retriever=demo_retriever)
    assert (rag.max_hops, rag.max_passages, rag.answer_rules, rag.compaction_enabled) == (3, 7, (), False)
    assert (rag.compaction_budget.limit, rag.compaction_budget.unit) == (500, "chars")
    assert rag.tagged_budget is None  # a budget the config names holds for every question
    assert rag.synthesizer is extractive_synthesizer and rag.retriever is demo_retriever


def test_a_null_budget_is_the_default_one_or_the_tagged_one(demo_retriever):
    rag = build_rag(MultiHopConfig(), retriever=demo_retriever)
    assert rag.compaction_budget == Budget(DEFAULT_BUDGET_TOKENS, "tokens")
    assert rag.tagged_budget == Budget(TAGGED_BUDGET_TOKENS, "tokens")
    # the demo rows carry no source or date: their answers are those of the default budget
    result = rag.multi_hop_search("Between Harvey Pekar and Denise Levertov who was born earlier?")
    assert result.compaction.budget == Budget(DEFAULT_BUDGET_TOKENS, "tokens")


def test_ask_and_the_capability_print_the_same_record(capsys, golden_questions):
    question = golden_questions[1].question
    assert main(["ask", question, "--json", "--reader", "none", "--compaction", "line", "--max-chars", "600"]) == 0
    printed = json.loads(capsys.readouterr().out)
    base = MultiHopConfig()
    config = dataclasses.replace(base, compaction=dataclasses.replace(base.compaction, strategy="line", unit="chars",
                                                                       budget=600))
    ctx = RequestContext(question)
    result = MultiHopCapability(config).execute(ctx)
    assert printed == result_record(result, detail=True)


def test_every_reader_fits_its_window_with_the_configured_strategy():
    """``build_synthesizer(config)`` (``serve``, ``batch``, the HTTP service) and ``build_rag``
    alike: a prompt that does not fit is compacted by ``compaction.strategy``, not a default."""
    from rootweaver_capabilities.assembly import build_synthesizer
    from rootweaver_innovations.compaction.line import LineCompactor

    config = MultiHopConfig.from_mapping({"compaction": {"strategy": "line"},
                                          "llm": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}})
    assert isinstance(build_synthesizer(config).compactor.compactor, LineCompactor)
    assert isinstance(build_rag(config, retriever=object()).synthesizer.compactor.compactor, LineCompactor)


@pytest.mark.parametrize("flash", [True, False])
def test_the_embedded_reader_gets_the_configured_flash_attention(flash):
    from rootweaver_capabilities.assembly import build_synthesizer
    from rootweaver_capabilities.readers.runtimes import installed_runtime

    if installed_runtime("auto") is None:
        pytest.skip("no llama.cpp runtime installed (extra 'reader')")
    config = MultiHopConfig.from_mapping({"llm": {"provider": "local", "flash_attention": flash}})
    client = build_synthesizer(config).client  # the model is not loaded until the first call
    assert client.flash_attention is flash and client.runtime == "auto"


def test_a_citation_of_a_chunk_names_the_chunks_before_and_after_it():
    from rootweaver_capabilities.result_json import answer_record
    from rootweaver_innovations.documents.corpus import Source
    from rootweaver_innovations.records import Fact

    chunk = Fact("notes.md#1", "Notes", "The harbour reopened in May.", 0,
                 source=Source("notes.md", ("Harbour",), 1, prev="notes.md#0", next="notes.md#2"))
    (cited,) = answer_record(Answer("May", (chunk,)))["citations"]
    assert cited["source"] == {"path": "notes.md", "headings": ["Harbour"], "position": 1,
                               "prev": "notes.md#0", "next": "notes.md#2"}

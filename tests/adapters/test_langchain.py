"""LangChain adapters: hop retriever, compressor in a retrieval chain, the standard suite."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_tests")

from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402
from pydantic import ConfigDict  # noqa: E402

from rootweaver_capabilities.adapters.langchain import (  # noqa: E402
    LangChainHopRetriever,
    LineCompactorCompressor,
    MultiHopRetriever,
    document_to_passage,
)
from rootweaver_innovations.records import format_fact  # noqa: E402
from rootweaver_innovations.documents.corpus import Passage  # noqa: E402
from rootweaver_innovations.documents.demo import demo_passages  # noqa: E402
from rootweaver_innovations.compaction.packing import Budget
from rootweaver_innovations.loop.multihop import MultiHopRAG  # noqa: E402
from rootweaver_innovations.retrieval.retrievers import BM25Retriever  # noqa: E402

QUESTION = "Between Harvey Pekar and Denise Levertov who was born earlier?"


class DemoLangChainRetriever(BaseRetriever):
    """A plain LangChain retriever (BM25 over the demo corpus) standing in for any vector store."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    bm25: BM25Retriever
    k: int = 4

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None) -> list[Document]:
        return [
            Document(page_content=hit.passage.text, id=hit.passage.id,
                     metadata={"title": hit.passage.title, "sentences": list(hit.passage.sentences)})
            for hit in self.bm25.search(query, k or self.k)
        ]


@functools.cache
def _demo_bm25() -> BM25Retriever:
    return BM25Retriever(demo_passages())


@pytest.fixture(scope="module")
def bm25():
    return _demo_bm25()


def test_any_langchain_retriever_can_be_the_hop_retriever(bm25, golden_questions):
    hop = LangChainHopRetriever(DemoLangChainRetriever(bm25=bm25), k_kwarg="k")
    direct_rag = MultiHopRAG(bm25)
    via_rag = MultiHopRAG(hop, title_index=direct_rag.title_index)  # a LangChain retriever exposes no corpus
    for q in [g.question for g in golden_questions[:6]]:
        via_langchain = via_rag.multi_hop_search(q)
        direct = direct_rag.multi_hop_search(q)
        assert via_langchain.trajectory() == direct.trajectory()
        assert via_langchain.full_context == direct.full_context
    hits = hop.search(QUESTION, 2)
    assert [h.rank for h in hits] == [0, 1] and hits[0].score == 1.0 and hits[1].score == 0.5
    with pytest.raises(ValueError, match="k must be"):
        hop.search(QUESTION, 0)


def test_document_to_passage_ids_titles_and_sentences():
    p = document_to_passage(Document(page_content="One. Two here.", metadata={"source": "wiki/X"}))
    assert p.title == "wiki/X" and p.sentences == ("One.", "Two here.") and p.id.startswith("lc:")
    assert p.id == document_to_passage(Document(page_content="One. Two here.")).id  # content-stable
    assert document_to_passage(Document(page_content="x", id="d1")).id == "d1"
    assert document_to_passage(Document(page_content="x", metadata={"id": "m1"})) == Passage("m1", "", ("x",))


def test_compressor_keeps_verbatim_sentences_within_the_budget(bm25):
    docs = DemoLangChainRetriever(bm25=bm25, k=6).invoke(QUESTION)
    all_lines = {
        format_fact(d.metadata["title"], s): (d.id, i) for d in docs for i, s in enumerate(d.metadata["sentences"])
    }
    for budget in (1, 80, 300, 700, 100_000):
        out = LineCompactorCompressor(max_chars=budget).compress_documents(docs, QUESTION)
        lines = [format_fact(d.metadata["title"], d.metadata["sentences"][i]) for d in out
                 for i in d.metadata["kept_sentences"]]
        assert all(line in all_lines for line in lines)
        assert len("\n".join(lines)) <= budget
        assert sum(len(d.page_content) for d in out) <= budget
        assert [d.id for d in out] == [d.id for d in docs if d.id in {o.id for o in out}]  # input order
        for d in out:
            src = next(x for x in docs if x.id == d.id)
            assert d.metadata["title"] == src.metadata["title"]
            assert d.metadata["dropped_sentences"] == len(src.metadata["sentences"]) - len(d.metadata["kept_sentences"])
    everything = LineCompactorCompressor(max_chars=100_000).compress_documents(docs, QUESTION)
    assert len(everything) == len(docs) and all(d.metadata["dropped_sentences"] == 0 for d in everything)
    assert LineCompactorCompressor().compress_documents([], QUESTION) == []
    with pytest.raises(ValueError, match=r"max_chars\s+Input should be greater than or equal to 1"):
        LineCompactorCompressor(max_chars=0)


# The README's LangChain example, run as a test (keep the two in sync).
def _readme_langchain_blocks() -> list[str]:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    if not readme.is_file():
        return []
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [b for b in blocks if "LineCompactorCompressor" in b]


def test_the_langchain_examples_in_the_readme_run():
    blocks = _readme_langchain_blocks()
    if not blocks:
        pytest.fail("README.md has no LangChain example")
    for i, block in enumerate(blocks):
        namespace: dict = {}
        exec(compile(block, f"README.md (LangChain block {i})", "exec"), namespace)  # noqa: S102
        assert any(isinstance(v, LineCompactorCompressor) for v in namespace.values())


def test_readme_retrieval_chain_with_our_compressor_runs():
    blocks = _readme_langchain_blocks()
    assert blocks, "README.md must show the LangChain retrieval chain with LineCompactorCompressor"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md (LangChain example)", "exec"), namespace)  # noqa: S102
    assert namespace["answer"] == "Harvey Pekar"
    question = "Between Harvey Pekar and Denise Levertov who was born earlier?"
    docs = namespace["retriever"].invoke(question)
    step = namespace["compress"]({"docs": docs, "question": question})
    assert 0 < len(step["context"]) <= 600
    assert "Harvey Pekar" in step["context"] or "Levertov" in step["context"]
    prompt_value = namespace["prompt"].invoke(step)
    assert step["context"] in prompt_value.to_string()


def test_multihop_retriever_documents_carry_their_source(bm25):
    rag = MultiHopRAG(bm25)
    docs = MultiHopRetriever(rag=rag, k=50).invoke(QUESTION)
    result = rag.multi_hop_search(QUESTION)
    assert len(docs) == min(50, len(result.facts))
    by_id = {p.id: p for p in demo_passages()}
    for d in docs:
        m = d.metadata
        assert m["source"] == m["id"] and d.page_content == by_id[m["id"]].sentences[m["sentence_index"]]
        assert m["title"] == by_id[m["id"]].title
        assert m["sub_query"] == result.hops[m["hop"]].sub_query
    compacting = MultiHopRAG(bm25, compaction_enabled=True, compaction_budget=Budget.chars(300))
    small = MultiHopRetriever(rag=compacting, k=50).invoke(QUESTION)
    synth = compacting.multi_hop_search(QUESTION).synth_context
    assert 0 < len(small) < len(docs) and all(d.page_content in synth for d in small)
    with pytest.raises(ValueError, match="rag must be a MultiHopRAG, got str"):
        MultiHopRetriever(rag="not a rag")


class TestMultiHopRetrieverStandard(RetrieversIntegrationTests):
    """langchain-tests' own retriever suite against MultiHopRetriever."""

    # The suite's one async test needs pytest-asyncio (strict mode): mark the class, and
    # silence the notice that its sync tests carry the mark too.
    pytestmark = [
        pytest.mark.asyncio,
        pytest.mark.filterwarnings("ignore:The test <Function .* is marked with '@pytest.mark.asyncio'"),
    ]

    @property
    def retriever_constructor(self) -> type[MultiHopRetriever]:
        return MultiHopRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"rag": MultiHopRAG(_demo_bm25())}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION

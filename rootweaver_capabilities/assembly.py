"""The one place a configured ``MultiHopRAG`` is put together.

:func:`build_rag` turns a validated :class:`~rootweaver_capabilities.config.MultiHopConfig` into
the loop: the retriever (:func:`build_retriever`), the compaction strategy, the answer rules and
the reader (:func:`build_synthesizer`, which fits its window with that same strategy).
``rootweaver ask``, ``rootweaver serve`` and :class:`~rootweaver_capabilities.capability.MultiHopCapability`
all call it; command-line options override the config with ``dataclasses.replace`` first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from rootweaver_innovations.answer_rules.registry import make_answer_rules
from rootweaver_innovations.compaction.budget import Budget
from rootweaver_innovations.defaults import DEFAULT_BUDGET_TOKENS, TAGGED_BUDGET_TOKENS
from rootweaver_innovations.documents.folders import SkippedFile, load_reading_budget
from rootweaver_innovations.answer_rules.extractive import extractive_under
from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import DEFAULT_CONVENTIONS, get_conventions
from rootweaver_innovations.loop.multihop import MultiHopRAG, Synthesizer
from rootweaver_innovations.retrieval.retrievers import BM25Retriever, Retriever
from rootweaver_innovations.compaction.strategies import Compactor, make_compactor

from rootweaver_capabilities.config import CompactionConfig, MultiHopConfig, RetrieverConfig

__all__ = ["build_compactor", "build_rag", "build_retriever", "build_synthesizer", "retriever_conventions"]


_log = logging.getLogger("rootweaver.documents")


def _log_skip(skipped: SkippedFile) -> None:
    _log.warning("skipped %s: %s", skipped.path, skipped.reason)


def build_retriever(cfg: RetrieverConfig, on_skip: Callable[[SkippedFile], None] = _log_skip, *,
                    conventions: str | None = None) -> Retriever:
    """The retriever of ``cfg.mode`` (auto, BM25, dense or hybrid:
    :func:`~rootweaver_innovations.retrieval.modes.with_mode`) over the index ``cfg.index``
    (memory-mapped; checked against ``cfg.corpus`` when that is set too), else over ``cfg.corpus``
    (a JSONL file, or a folder of documents chunked by ``cfg.chunking``: each file it skips goes
    to ``on_skip``, by default a warning of the ``rootweaver.documents`` logger), else over the
    bundled demo corpus, under the conventions named ``conventions`` (an index's own when
    ``None``, else the default; an index built under others is refused). A bad corpus or index
    raises a ``ValueError`` (``CorpusError``, ``IndexFormatError``) naming the file; an index
    saved without a title index (built by an older rootweaver) opens with a warning of the
    ``rootweaver.index`` logger. A mode that cannot be served (no ``dense`` extra, an index
    without embeddings, the SphinxQL backend) falls back to BM25 with one warning of the
    ``rootweaver.retrieval`` logger. Backend ``sphinxql``: the Manticore/Sphinx cluster of
    ``cfg.sphinxql``."""
    note = logging.getLogger("rootweaver.retrieval").warning
    if cfg.backend == "sphinxql":
        from rootweaver_capabilities.cluster.sphinxql import SphinxQLRetriever

        if cfg.mode in ("dense", "hybrid"):
            note("retriever.mode %s: the sphinxql backend searches with BM25 alone", cfg.mode)
        return SphinxQLRetriever(cfg.sphinxql)
    if cfg.index is not None:
        from rootweaver_innovations.retrieval.index import open_index

        index = open_index(cfg.index, corpus=cfg.corpus, conventions=conventions)
        if index.titles is None:
            logging.getLogger("rootweaver.index").warning(
                "%s has no title index (built before rootweaver saved one): the loop indexes every title "
                "at start; rebuild it with `rootweaver index build` to start fast", cfg.index)
        return index.retriever(cfg.mode, on_note=note)
    from rootweaver_innovations.retrieval.modes import with_mode

    member = _named(conventions)
    if cfg.corpus is not None and Path(cfg.corpus).is_dir():
        from rootweaver_innovations.documents.folders import load_documents

        scan = load_documents(cfg.corpus, cfg.chunking.settings(), on_skip, member)
        return with_mode(cfg.mode, BM25Retriever(list(scan.passages), backend=cfg.backend, conventions=member),
                         on_note=note)
    from rootweaver_innovations.documents.corpus import load_corpus_jsonl
    from rootweaver_innovations.documents.demo import DEMO_CORPUS

    lexical = BM25Retriever(load_corpus_jsonl(cfg.corpus or DEMO_CORPUS, cfg.max_record_bytes), backend=cfg.backend,
                            conventions=member)
    return with_mode(cfg.mode, lexical, on_note=note)


def retriever_conventions(retriever: Retriever, config: MultiHopConfig) -> Conventions:
    """The conventions a loop over ``retriever`` reads its corpus under: those it was built with
    (an index's, or an in-memory corpus's), else ``config.conventions``, else the default."""
    built = getattr(retriever, "conventions", None)
    return built if built is not None else _named(config.conventions)


def _named(name: str | None) -> Conventions:
    """The conventions registered as ``name``; the default member for ``None``."""
    return get_conventions(name or DEFAULT_CONVENTIONS)


def build_compactor(cfg: CompactionConfig) -> Compactor:
    """The strategy ``cfg.strategy`` behind the configured input cap."""
    return make_compactor(cfg.strategy, max_input_chars=cfg.max_input_chars, max_input_lines=cfg.max_input_lines)


def build_synthesizer(config: MultiHopConfig, compactor: Compactor | None = None, *,
                      conventions: Conventions | None = None) -> Synthesizer:
    """The reader of ``config.llm.provider``: the extractive answer for ``none``, an
    :class:`~rootweaver_capabilities.readers.synthesizer.LLMSynthesizer` on the embedded model for ``local`` or
    on the endpoint for ``openai``, fitting its window with ``compactor`` (default: the configured
    strategy, :func:`build_compactor`). ``ValueError`` (one line, with the install command) when
    ``local`` is asked for but its llama.cpp runtime is not installed. The reader's prompt and the
    extractive answer read comparisons under ``conventions`` (``config.conventions`` or the
    default when ``None``)."""
    cfg, conventions = config.llm, conventions or _named(config.conventions)
    if cfg.provider == "none":
        return extractive_under(conventions)
    from rootweaver_capabilities.readers.openai_client import OpenAIChatClient
    from rootweaver_capabilities.readers.synthesizer import LLMSynthesizer

    if cfg.provider == "local":
        from rootweaver_capabilities.readers.embedded import LlamaCppChatClient
        from rootweaver_capabilities.readers.models import INSTALL_HINT
        from rootweaver_capabilities.readers.runtimes import installed_runtime

        if not installed_runtime(cfg.runtime):
            raise ValueError(f"llm.provider is 'local' but the embedded reader (runtime {cfg.runtime}) is not "
                             f"installed: {INSTALL_HINT}")
        client = LlamaCppChatClient(cfg.model_path, model=cfg.model, context_window=cfg.context_window,
                                    max_tokens=cfg.max_tokens, timeout_s=cfg.timeout_s, runtime=cfg.runtime,
                                    flash_attention=cfg.flash_attention)
    else:
        client = OpenAIChatClient(
            cfg.base_url, cfg.model, api_key_env=cfg.api_key_env, timeout_s=cfg.timeout_s,
            context_window=cfg.context_window, max_tokens=cfg.max_tokens,
        )
    return LLMSynthesizer(client, mode=cfg.mode,
                          compactor=compactor if compactor is not None else build_compactor(config.compaction),
                          conventions=conventions)


def build_rag(
    config: MultiHopConfig, *, retriever: Retriever | None = None, synthesizer: Synthesizer | None = None,
) -> MultiHopRAG:
    """The loop ``config`` describes; ``retriever`` and ``synthesizer`` replace the configured
    ones (a runtime that already holds them). Compaction runs when ``compaction.enabled``; the
    strategy is built either way, since the reader fits its window with it. Over a corpus of
    document chunks ``max_passages`` counts paragraphs' worth of reading
    (:meth:`~rootweaver_innovations.documents.folders.ReadingBudget.passages`). A ``compaction.budget``
    of ``None`` is the default budget, or the tagged one when a document read carries a source or
    a date (:meth:`~rootweaver_innovations.loop.multihop.MultiHopRAG.synth_budget`)."""
    compactor, budget = build_compactor(config.compaction), config.compaction.budget
    retriever = retriever if retriever is not None else build_retriever(config.retriever,
                                                                        conventions=config.conventions)
    conventions = retriever_conventions(retriever, config)
    return MultiHopRAG(
        retriever,
        conventions=conventions,
        synthesizer=synthesizer if synthesizer is not None else build_synthesizer(config, compactor,
                                                                                 conventions=conventions),
        answer_rules=make_answer_rules(config.answer_rules),
        max_hops=config.max_hops,
        max_passages=load_reading_budget().passages(config.max_passages, getattr(retriever, "passages", ())),
        stop_rule=config.stop_rule,
        passages_per_hop=config.passages_per_hop,
        answerability_threshold=config.answerability_threshold,
        compaction_enabled=config.compaction.enabled,
        compaction_budget=Budget(DEFAULT_BUDGET_TOKENS if budget is None else budget, config.compaction.unit),
        tagged_budget=None if budget is not None else Budget(TAGGED_BUDGET_TOKENS, config.compaction.unit),
        compactor=compactor,
    )

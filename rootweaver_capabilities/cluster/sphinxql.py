"""A ``Retriever`` over Manticore Search or Sphinx (SphinxQL, the MySQL protocol, via pymysql),
and the exporter that loads a corpus into their RT shards.

Layout written by :func:`write_node_configs` (checked with Sphinx 2.2.11; Manticore reads
the same plain-config syntax): ``S`` RT shards ``<index>_s0 .. <index>_s{S-1}`` (a passage
goes to shard ``position % S``), **every node holds every shard** (each node is a full
mirror of the corpus), and every node serves the distributed index ``<index>`` with one
``agent`` line per shard listing that shard on all nodes (``host:port:shard|host:port:shard``),
the first mirror rotating per shard so the shards' work spreads over the nodes. A query to
any node's ``<index>`` fans out to one mirror of each shard (``ha_strategy = nodeads``: a
mirror with 3 errors in a row is left out until its pings, every 0.5 s, succeed again).
searchd answers a query whose chosen mirror failed *without that shard*, with a warning:
the retriever reads ``SHOW WARNINGS`` after every query and treats a warning as a failed
attempt, so a partial ranking is never returned. :func:`export_corpus` writes every shard to every node (``REPLACE``, so a
re-run is idempotent): replication is the exporter's job on Sphinx (Manticore's own
replication is in ``docs/adr/0002``).

Ranking: document field ``content`` = ``subject + " " + title + " " + text`` (a window's
file subject, as :func:`~rootweaver_innovations.retrieval.tokens.passage_tokens` indexes it) with
:data:`CHARSET_TABLE` (lowercased letters and digits) and the exact :data:`STOP_WORDS` list,
lengths counted by the exporter as the local index counts them (attribute ``ntok`` =
``len(passage_tokens(p, subject))``). A query is :func:`bm25_tokenize`'s tokens OR-ed
(``a | b``; MATCH is AND by default). Sphinx 2.2.11's length-normalised ``bm25a()`` is 0 on
RT indexes even with ``index_field_lengths = 1`` (no average field length; its
``content_len`` also counts stop words), and its ``bm25`` ranker ignores lengths and scores
each shard with its own statistics, so ranking is two-stage: searchd returns its
:data:`CANDIDATES` best by its ``bm25`` factor with each one's ``ntok`` and per-word
``tf`` (``PACKEDFACTORS()``); the retriever re-scores them with the local index's BM25 (bm25s's
term score, k1 1.5, b 0.75, Robertson idf with the Lucene fallback, repeated query terms
counted again) over **global** statistics: document frequencies summed over
the shards (``CALL KEYWORDS`` on each; every node holds every shard), the document count
and mean length read once. Ties by corpus position. The only difference left from the
local index is a passage outside searchd's candidates (and Sphinx's own tokenizer).

Failures: a search tries the hosts in order, then ``retries`` more rounds with backoff,
all within ``deadline_s`` (each connect and read is bounded by the time left; no attempt
starts with under 50 ms left); then one :class:`SphinxQLError` naming the hosts and the last
failure. A connection that failed is dropped and reopened on the next use.
"""

from __future__ import annotations

import json
import math
from collections import Counter
import re
import threading
import time
from collections.abc import Iterable, Sequence
from itertools import tee
from pathlib import Path
from typing import Any

from rootweaver_innovations.text import STOP_WORDS, bm25_tokenize
from rootweaver_innovations.documents.corpus import Passage
from rootweaver_innovations.conventions.base import Conventions
from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.retrieval.titles import file_subjects
from rootweaver_innovations.retrieval.retrievers import ScoredPassage
from rootweaver_innovations.retrieval.tokens import passage_tokens

from rootweaver_capabilities.cluster import SHARDS
from rootweaver_capabilities.config import SphinxQLConfig

__all__ = ["SphinxQLError", "SphinxQLRetriever", "export_corpus", "parse_nodes", "write_node_configs"]

_INDEX = SphinxQLConfig().index  # the index retriever.sphinxql.index names by default
CANDIDATES = 100  # passages searchd ranks (its own tf-idf, ``bm25`` factor) before the exact BM25 re-score
# Letters and digits lowercased, like ``\\w+`` + lower(): ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic
# (Sphinx 2.2.11 has no ``non_cjk`` alias; ``A..B/2`` maps alternating upper/lower pairs).
CHARSET_TABLE = ("0..9, A..Z->a..z, _, a..z, U+C0..U+D6->U+E0..U+F6, U+D8..U+DE->U+F8..U+FE, U+DF, U+E0..U+F6, "
                 "U+F8..U+FF, U+100..U+12F/2, U+132..U+137/2, U+139..U+148/2, U+14A..U+177/2, U+179..U+17E/2, "
                 "U+391..U+3A1->U+3B1..U+3C1, U+3A3..U+3A9->U+3C3..U+3C9, U+3B1..U+3C9, "
                 "U+410..U+42F->U+430..U+44F, U+430..U+44F, U+401->U+451, U+451")
PAGE = 1000  # rows per page when streaming every passage (searchd's default max_matches)
_CONTROL = str.maketrans({c: " " for c in "\x00\n\r\t\x1a"})


class SphinxQLError(ConnectionError):
    """No searchd node answered within the deadline (or the query itself was refused); one line.
    A ``ConnectionError`` (``OSError``): the CLI prints it as one line, like any unreachable service."""


def _shard_names(index: str, shards: int) -> list[str]:
    return [f"{index}_s{i}" for i in range(shards)]


def parse_nodes(text: str) -> list[tuple[str, int, int]]:
    """``HOST:SQLPORT:APIPORT[,...]`` -> ``[(host, sql_port, api_port), ...]`` (``ValueError`` otherwise)."""
    nodes = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) != 3 or not parts[0] or not all(p.isdigit() and 0 < int(p) < 65536 for p in parts[1:]):
            raise ValueError(f"--nodes: expected HOST:SQLPORT:APIPORT[,...], got {item.strip()!r}")
        nodes.append((parts[0], int(parts[1]), int(parts[2])))
    if len({(h, s) for h, s, _ in nodes} | {(h, a) for h, _, a in nodes}) != 2 * len(nodes):
        raise ValueError("--nodes: every port must be distinct")
    return nodes


class SphinxQLRetriever:
    """BM25 search over the distributed index of a Manticore/Sphinx cluster (module docstring).

    ``search(query, k)`` returns up to ``k`` passages best first (``ValueError`` for ``k < 1``;
    an empty list for a query without an indexable token). ``passages`` streams the whole
    corpus from the cluster once, in corpus order (the loop's title index is built from it).
    Thread-safe: one connection per thread.
    """

    def __init__(self, cfg: SphinxQLConfig):
        self.cfg = cfg
        self.hosts = [(h.strip().rpartition(":")[0], int(h.rpartition(":")[2])) for h in cfg.hosts.split(",")]
        self._local = threading.local()
        self._passages: list[Passage] | None = None
        self._shards: list[str] | None = None
        self._n = 0
        self._avgdl = 1.0
        self._lock = threading.RLock()

    def _connect(self, host: str, port: int, budget: float) -> Any:
        import pymysql

        cfg = self.cfg
        return pymysql.connect(host=host, port=port, user=cfg.user or "", password=cfg.password() or "",
                               connect_timeout=max(0.05, min(cfg.connect_timeout_s, budget)),
                               read_timeout=max(0.05, min(cfg.query_timeout_s, budget)),
                               write_timeout=max(0.05, min(cfg.query_timeout_s, budget)), charset="utf8mb4")

    def _query(self, sql: str, args: Sequence[Any] = (), *, distributed: bool = True) -> list[tuple]:
        """Rows of ``sql`` from the first node that answers (see the module docstring); a
        ``distributed`` query's warnings (a shard missing) make the attempt fail."""
        import pymysql

        cfg = self.cfg
        deadline = time.monotonic() + cfg.deadline_s
        last, attempts = "no attempt", 0
        conns: dict[tuple[str, int], Any] = self._local.__dict__.setdefault("conns", {})
        for attempt in range(cfg.retries + 1):
            for host in self.hosts:
                budget = deadline - time.monotonic()
                if budget < 0.05:  # not even a refused connect fits any more
                    break
                attempts += 1
                try:
                    conn = conns.get(host)
                    if conn is None:
                        conn = conns[host] = self._connect(*host, budget)
                    with conn.cursor() as cur:
                        cur.execute(sql, args)
                        rows = list(cur.fetchall())
                        warnings = []
                        if distributed:  # a mirror that failed: searchd answers without its shard
                            cur.execute("SHOW WARNINGS")
                            warnings = [_text(w[2]) for w in cur.fetchall()]
                    if not warnings:
                        return rows
                    last = f"{host[0]}:{host[1]}: partial answer: {' '.join(warnings[0].split())[:200]}"
                except pymysql.err.ProgrammingError as exc:
                    message = " ".join(_text(str(exc.args[-1])).split()).rstrip("\x00")
                    if "agent" not in message:  # the query itself is wrong: another node will not help
                        raise SphinxQLError(f"sphinxql {host[0]}:{host[1]}: query refused: {message}") from None
                    last = f"{host[0]}:{host[1]}: {message[:200]}"  # a shard's mirrors all failed on that node
                except (pymysql.err.MySQLError, OSError) as exc:
                    last = f"{host[0]}:{host[1]}: {' '.join(str(exc.args[-1] if exc.args else exc).split())[:200]}"
                    bad = conns.pop(host, None)
                    if bad is not None:
                        bad.close() if bad.open else None
            pause = min(0.1 * (attempt + 1), deadline - time.monotonic())
            if attempt < cfg.retries and pause > 0:
                time.sleep(pause)
        raise SphinxQLError(f"sphinxql: no node of {cfg.hosts} answered index {cfg.index!r} within "
                            f"{cfg.deadline_s:g} s ({attempts} attempt(s)); last error {last}")

    def _stats(self) -> tuple[list[str], int, float]:
        """(shard names, documents, mean content length), read once from the first node that answers."""
        with self._lock:
            if self._shards is None:
                prefix = f"{self.cfg.index}_s"
                names = sorted((_text(r[0]) for r in self._query("SHOW TABLES", distributed=False)
                                if _text(r[0]).startswith(prefix) and _text(r[0])[len(prefix):].isdigit()),
                               key=lambda n: int(n[len(prefix):]))
                n, avg = self._query(f"SELECT COUNT(*) c, AVG(ntok) a, 1 g FROM {self.cfg.index} GROUP BY g")[0][:2]
                if not names or not n:
                    raise SphinxQLError(f"sphinxql: index {self.cfg.index!r} has no shards {prefix}N or no documents; "
                                        "load it with `rootweaver index export --to sphinxql`")
                self._shards, self._n, self._avgdl = names, int(n), float(avg)
            return self._shards, self._n, self._avgdl

    def search(self, query: str, k: int) -> list[ScoredPassage]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        tokens = bm25_tokenize(query)
        if not tokens:
            return []
        shards, n_docs, avgdl = self._stats()
        match = " | ".join(dict.fromkeys(tokens))  # \w+ tokens: no SphinxQL operator characters
        words: dict[int, str] = {}  # searchd's query position - 1 (PACKEDFACTORS' wordN) -> word
        df: dict[str, int] = {}
        for shard in shards:  # global document frequencies: every node holds every shard (module docstring)
            rows = self._query("CALL KEYWORDS(%s, %s, 1)", (match, shard), distributed=False)
            words = {int(r[0]) - 1: _text(r[2]) for r in rows}
            for r in rows:
                df[_text(r[2])] = df.get(_text(r[2]), 0) + int(r[3])
        if not words:
            return []
        slots = [words.get(i) for i in range(max(words) + 1)]  # None: a position searchd dropped
        depth = max(CANDIDATES, 4 * int(k))
        rows = self._query(f"SELECT id, ntok, PACKEDFACTORS(), pid, title, sentences FROM {self.cfg.index} "
                           f"WHERE MATCH(%s) "
                           f"ORDER BY WEIGHT() DESC, id ASC LIMIT {depth} "
                           f"OPTION ranker=expr('bm25'), max_matches={max(PAGE, depth)}", (match,))
        repeats = Counter(tokens)  # a repeated query term counts again, as in the local index
        scored = _bm25(rows, [df.get(w, 0) if w else n_docs for w in slots], [repeats.get(w, 0) for w in slots],
                       n_docs, avgdl)
        top = sorted(scored, key=lambda s: (-s[1], s[0]))[: int(k)]
        by_id = {r[0]: r for r in rows}
        return [ScoredPassage(_passage((i, *by_id[i][3:])), score, rank) for rank, (i, score) in enumerate(top)]

    @property
    def passages(self) -> list[Passage]:
        """Every passage of the cluster in corpus order, fetched once by id pages."""
        with self._lock:
            if self._passages is None:
                out: list[Passage] = []
                last = 0
                while True:
                    rows = self._query(f"SELECT id, pid, title, sentences FROM {self.cfg.index} WHERE id > {last} "
                                       f"ORDER BY id ASC LIMIT {PAGE} OPTION max_matches={PAGE}")
                    out.extend(_passage(r) for r in rows)
                    if len(rows) < PAGE:
                        break
                    last = rows[-1][0]
                self._passages = out
            return self._passages


_WORD_FACTOR = re.compile(r"word(\d+)=\(tf=(\d+), idf=")


def _bm25(rows: Sequence[Sequence[Any]], df: Sequence[int], repeats: Sequence[int], n: int, avgdl: float,
          k1: float = 1.5, b: float = 0.75) -> list[tuple[int, float]]:
    """``(id, BM25)`` of candidate rows ``(id, ntok, PACKEDFACTORS())`` for query words with
    document frequencies ``df`` occurring ``repeats`` times in the query, with bm25s's term
    score ``tf / (tf + k1 (1 - b + b len / avgdl))`` and the local index's idf: Robertson ``log((N - df + 0.5) / (df + 0.5))`` floored at 0, or Lucene's
    ``log(1 + (N - df + 0.5) / (df + 0.5))`` when that scores every candidate 0 (as
    :class:`~rootweaver_innovations.retrieval.retrievers.BM25Retriever` does)."""
    parsed = []
    for row in rows:
        tfs = {int(m.group(1)): int(m.group(2)) for m in _WORD_FACTOR.finditer(_text(row[2]))}
        norm = k1 * (1 - b + b * int(row[1]) / avgdl)
        parsed.append((row[0], [(i, repeats[i] * tf / (tf + norm)) for i, tf in tfs.items() if tf and i < len(df)]))
    for lucene in (False, True):
        idf = [math.log((1.0 if lucene else 0.0) + (n - d + 0.5) / (d + 0.5)) for d in df]
        idf = [max(0.0, v) for v in idf]
        out = [(i, sum(idf[w] * s for w, s in terms)) for i, terms in parsed]
        if any(s > 0 for _, s in out) or lucene:
            return out
    return []


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _passage(row: Sequence[Any]) -> Passage:
    return Passage(_text(row[1]), _text(row[2]), tuple(json.loads(_text(row[3]))))


def write_node_configs(out: str | Path, nodes: Sequence[tuple[str, int, int]], *, index: str = _INDEX,
                       shards: int = SHARDS) -> list[Path]:
    """Write ``out/node<i>/searchd.conf`` for each node and ``out/stopwords.txt``; the conf paths.

    Each node's data, logs and pid file live in its own folder; listeners bind the node's
    host only. Start a node with ``searchd --config out/node<i>/searchd.conf``.
    """
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # only single-token stop words: searchd splits an entry such as "it's" into "it" and "s" and would drop
    # both, while our tokenizer never produces "it's" (so that entry never removes anything locally)
    words = sorted(w for w in STOP_WORDS if re.fullmatch(r"\w+", w))
    (out / "stopwords.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    names = _shard_names(index, shards)
    agents = []
    for s, name in enumerate(names):
        order = [nodes[(s + j) % len(nodes)] for j in range(len(nodes))]  # first mirror rotates per shard
        agents.append("    agent = " + "|".join(f"{h}:{api}:{name}" for h, _, api in order))
    paths = []
    for i, (host, sql, api) in enumerate(nodes):
        d = out / f"node{i}"
        (d / "data").mkdir(parents=True, exist_ok=True)
        blocks = [f"""index {name}
{{
    type = rt
    path = {d / 'data' / name}
    rt_field = content
    rt_attr_uint = ntok
    rt_attr_string = pid
    rt_attr_string = title
    rt_attr_string = sentences
    rt_mem_limit = 256M
    charset_table = {CHARSET_TABLE}
    stopwords = {out / 'stopwords.txt'}
}}
""" for name in names]
        blocks.append(f"""index {index}
{{
    type = distributed
{chr(10).join(agents)}
    agent_connect_timeout = 1000
    agent_query_timeout = 3000
    ha_strategy = nodeads
}}

searchd
{{
    listen = {host}:{api}
    listen = {host}:{sql}:mysql41
    log = {d / 'searchd.log'}
    query_log = {d / 'query.log'}
    pid_file = {d / 'searchd.pid'}
    binlog_path = {d / 'data'}
    workers = threads
    read_timeout = 5
    client_timeout = 300
    max_children = 30
    ha_ping_interval = 500
}}
""")
        path = d / "searchd.conf"
        path.write_text("\n".join(blocks), encoding="utf-8")
        paths.append(path)
    return paths


def export_corpus(passages: Iterable[Passage], nodes: Sequence[tuple[str, int, int]], *, index: str = _INDEX,
                  shards: int = SHARDS, batch: int = 500, timeout_s: float = 30.0,
                  conventions: Conventions | None = None) -> int:
    """Insert ``passages`` into the RT shards of every node (running, configured by
    :func:`write_node_configs` with the same ``index``/``shards``); the number of passages.
    Each passage's text carries its file's subject under ``conventions`` (the default member
    when ``None``; an opened index's, so the engine indexes what the local index does).

    Passage ``i`` (0-based, corpus order) is document id ``i + 1`` in shard ``i % shards``;
    ``REPLACE`` makes a re-run idempotent. Raises ``OSError``/``pymysql`` errors when a
    node is not reachable (every mirror must take the write).
    """
    import pymysql

    names = _shard_names(index, shards)
    conns = [pymysql.connect(host=h, port=sql, user="", password="", connect_timeout=timeout_s,
                             read_timeout=timeout_s, write_timeout=timeout_s, charset="utf8mb4", autocommit=True)
             for h, sql, _ in nodes]
    try:
        pending: list[list[tuple]] = [[] for _ in names]
        n = 0

        def flush(s: int) -> None:
            if not pending[s]:
                return
            values = ",".join(["(%s,%s,%s,%s,%s,%s)"] * len(pending[s]))
            args = [v for row in pending[s] for v in row]
            for conn in conns:
                with conn.cursor() as cur:
                    cur.execute(f"REPLACE INTO {names[s]} (id, content, ntok, pid, title, sentences) VALUES {values}", args)
            pending[s] = []

        read, subjects = tee(passages)  # one pass over any iterable: the subjects run a step ahead at most
        for i, (p, (_title, subject)) in enumerate(zip(read, file_subjects(subjects, conventions or default_conventions()))):
            s = i % shards
            content = f"{subject} {p.title} {p.text}".translate(_CONTROL)
            pending[s].append((i + 1, content, len(passage_tokens(p, subject)), p.id, p.title.translate(_CONTROL),
                               json.dumps(list(p.sentences), ensure_ascii=True)))
            n += 1
            if len(pending[s]) >= batch:
                flush(s)
        for s in range(shards):
            flush(s)
        return n
    finally:
        for conn in conns:
            conn.close()

"""Counting a prompt with the tokenizer of the model that will read it: the server's own
(llama.cpp's tokenize endpoint) when it has one, else the Qwen2.5 tokenizer."""

from __future__ import annotations

import os

import httpx

from rootweaver_innovations.compaction.budget import QwenTokenCounter, TokenCounter

__all__ = ["TOKENIZER_ENV", "LlamaCppServerCounter", "resolve_token_counter"]

TOKENIZER_ENV = "ROOTWEAVER_TOKENIZER_JSON"


class LlamaCppServerCounter:
    """Counts with the model actually loaded: llama-cpp-python's ``/extras/tokenize/count``.

    A :class:`~rootweaver_innovations.compaction.packing.TokenCounter`; HTTP errors propagate (the
    client retries them under its policy).
    """

    name = "llama.cpp-server"

    def __init__(self, base_url: str, *, timeout_s: float = 10.0, http: httpx.Client | None = None):
        self.url = f"{_server_root(base_url)}/extras/tokenize/count"
        self._http = http or httpx.Client(timeout=timeout_s)

    def count(self, text: str) -> int:
        resp = self._http.post(self.url, json={"input": text})
        resp.raise_for_status()
        return int(resp.json()["count"])


def _server_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def resolve_token_counter(base_url: str, *, http: httpx.Client | None = None) -> TokenCounter:
    """The server's tokenizer when it exposes one (llama.cpp), else the Qwen2.5 tokenizer:
    ``$ROOTWEAVER_TOKENIZER_JSON`` when set, otherwise the copy shipped with the package."""
    counter = LlamaCppServerCounter(base_url, http=http)
    try:
        counter.count("probe")
        return counter
    except (httpx.HTTPError, KeyError, ValueError):
        return QwenTokenCounter(os.environ.get(TOKENIZER_ENV) or None)


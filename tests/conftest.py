"""Shared fixtures: the bundled demo corpus and the bundled real datasets (``evals/data``)."""

from __future__ import annotations

from pathlib import Path

import pytest

BUNDLED_DATA = Path(__file__).resolve().parents[1] / "evals" / "data"


@pytest.fixture(scope="session")
def demo_passages():
    from rootweaver_innovations.documents.demo import demo_passages as load

    return load()


@pytest.fixture(scope="session")
def golden_questions():
    from rootweaver_innovations.documents.demo import load_questions

    return load_questions()


@pytest.fixture(scope="session")
def demo_retriever(demo_passages):
    from rootweaver_innovations.retrieval.retrievers import BM25Retriever

    return BM25Retriever(demo_passages)


@pytest.fixture(scope="session")
def bundled_data() -> Path:
    """The repo's own copy of the three dev subsets; a missing file fails the test (never a skip)."""
    assert BUNDLED_DATA.is_dir(), f"bundled datasets missing at {BUNDLED_DATA}"
    return BUNDLED_DATA

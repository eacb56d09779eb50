"""Shared fixtures: the bundled demo corpus and, when present, the shared real datasets."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def demo_passages():
    from rootweaver_innovations.demo import demo_passages as load

    return load()


@pytest.fixture(scope="session")
def golden_questions():
    from rootweaver_innovations.demo import load_questions

    return load_questions()


@pytest.fixture(scope="session")
def demo_retriever(demo_passages):
    from rootweaver_innovations.retrieval import BM25Retriever

    return BM25Retriever(demo_passages)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATA}")
    return SHARED_DATA

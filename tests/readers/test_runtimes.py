"""The embedded reader's runtime registry: names, what "installed" means, and the one-line errors.
Loading real models is in tests/integration/test_embedded_reader.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rootweaver_capabilities.config import READER_RUNTIMES, LLMConfig
from rootweaver_capabilities.readers.models import ReaderNotInstalledError
from rootweaver_capabilities.readers.runtimes import RUNTIMES, installed_runtime, load_runtime


def test_auto_keeps_an_installed_compiled_runtime_and_the_config_offers_every_runtime():
    assert RUNTIMES == READER_RUNTIMES == ("llama-cpp-python", "xllamacpp")
    assert LLMConfig().runtime == "auto"


def test_auto_with_no_runtime_installed_says_how_to_install_one(monkeypatch):
    from rootweaver_capabilities.readers import runtimes

    monkeypatch.setattr(runtimes, "installed_runtime", lambda name="auto": None)
    with pytest.raises(ReaderNotInstalledError, match=r'^no llama.cpp runtime for the embedded reader is installed: '
                                                      r'pip install "rootweaver\[reader\]"'):
        load_runtime("auto", Path("model.gguf"), n_ctx=512, n_threads=1, flash_attention=True)


def test_installed_runtime_answers_none_for_a_missing_or_unknown_package(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n in ("xllamacpp", "llama_cpp") else real(n))
    assert installed_runtime() is None and installed_runtime("xllamacpp") is None
    assert installed_runtime("gpt") is None


def test_an_unknown_runtime_is_one_line_naming_the_choices():
    with pytest.raises(ValueError, match=r"^unknown reader runtime 'vllm'; expected auto or one of: "
                                         r"llama-cpp-python, xllamacpp$"):
        load_runtime("vllm", Path("model.gguf"), n_ctx=512, n_threads=1, flash_attention=True)


@pytest.mark.parametrize("runtime, module", [("xllamacpp", "xllamacpp"), ("llama-cpp-python", "llama_cpp")])
def test_a_runtime_that_is_not_installed_says_how_to_install_the_reader(monkeypatch, runtime, module):
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(ReaderNotInstalledError, match=rf"^the reader runtime {runtime} is not installed: "
                                                      r'pip install "rootweaver\[reader\]"'):
        load_runtime(runtime, Path("model.gguf"), n_ctx=512, n_threads=1, flash_attention=True)


def test_the_load_probe_shares_no_first_token_with_a_chat_prompt():
    # xllamacpp caches the probe; a question that reused its first token would be evaluated
    # differently from llama-cpp-python's fresh context (and could answer differently)
    from rootweaver_capabilities.readers.chat import render_chatml
    from rootweaver_capabilities.readers.runtimes import _PROBE
    from rootweaver_innovations.compaction.budget import default_token_counter

    ids = default_token_counter().ids
    prompt = ids(render_chatml([{"role": "system", "content": "Answer."}, {"role": "user", "content": "ok"}]))
    assert ids(_PROBE)[1] == prompt[5] == 151645  # it checks a special id, <|im_end|>
    assert ids(_PROBE)[0] != prompt[0]

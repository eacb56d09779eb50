"""The command line starts cheap: building its parser and printing its help load no numpy,
yaml or retrieval code, and both packages load their public names on first use (PEP 562)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

HEAVY = ("numpy", "yaml", "rootweaver_innovations.retrieval.retrievers", "importlib.metadata")

_HELP_THEN_MODULES = """
import contextlib, io, sys
from rootweaver_capabilities.cli.main import build_parser, main

build_parser().format_help()
for argv in (["--help"], ["ask", "--help"], ["index", "build", "--help"], ["batch", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
print(" ".join(sys.modules))
"""


def test_parser_and_help_load_no_heavy_module():
    out = subprocess.run([sys.executable, "-c", _HELP_THEN_MODULES], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "rootweaver_capabilities.cli.main" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize("package", ["rootweaver_innovations", "rootweaver_capabilities"])
def test_every_public_name_resolves_lazily(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert module.__getattr__(name) is getattr(module, name), name
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.__getattr__("no_such_name")
    assert not hasattr(module, "no_such_name")


def test_help_lists_the_plug_ins_importlib_metadata_finds(tmp_path, monkeypatch):
    from importlib.metadata import entry_points

    from rootweaver_capabilities.cli.main import COMMANDS_GROUP, _plugin_names

    dist = tmp_path / "rw_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rw-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[console_scripts]\nnot_me = a:b\n\n[{COMMANDS_GROUP}]\nextra = m:add\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = _plugin_names()
    assert "extra" in names and "not_me" not in names
    assert sorted(names) == sorted({ep.name for ep in entry_points(group=COMMANDS_GROUP)})

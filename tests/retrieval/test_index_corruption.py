"""26 corrupted indexes: each is refused with exit 2 and one stderr line naming
the damaged file, by `rootweaver index verify` always and by `rootweaver ask --index`
whenever the damage is visible without hashing (dtype, shape, range, size, manifest);
never a traceback, never an answer from a damaged index.

The corruptions are made on a real index of the bundled demo corpus, by the same numpy /
JSON calls a damaged disk or a careless script would make.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rootweaver_capabilities.cli.main import main
from rootweaver_innovations.documents.demo import DEMO_CORPUS
from rootweaver_innovations.retrieval.index import build_index, open_index, verify_index


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("corrupt") / "demo"
    build_index(DEMO_CORPUS, out)
    return out


def _npy(rel: str, change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def edit(index: Path) -> None:
        arr = np.load(index / rel)
        np.save(index / rel, change(arr.copy()))
    return edit


def _set(i: int, value) -> Callable[[np.ndarray], np.ndarray]:
    def change(a: np.ndarray) -> np.ndarray:
        a[i] = value
        return a
    return change


def _manifest(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def edit(index: Path) -> None:
        raw = json.loads((index / "manifest.json").read_text())
        change(raw)
        (index / "manifest.json").write_text(json.dumps(raw))
    return edit


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    return lambda index: (index / rel).write_bytes(data)


def _truncate(rel: str) -> Callable[[Path], None]:
    def edit(index: Path) -> None:
        data = (index / rel).read_bytes()
        (index / rel).write_bytes(data[: len(data) // 2])
    return edit


def _flip_byte(rel: str, at_end: int) -> Callable[[Path], None]:
    """Change one byte ``at_end`` bytes before the end: same size, other content."""
    def edit(index: Path) -> None:
        data = bytearray((index / rel).read_bytes())
        data[-at_end] = data[-at_end] ^ 0x01
        (index / rel).write_bytes(bytes(data))
    return edit


def _patch(rel: str, offset: int, data: bytes) -> Callable[[Path], None]:
    """Overwrite bytes at ``offset``: same size, other content."""
    def edit(index: Path) -> None:
        raw = bytearray((index / rel).read_bytes())
        raw[offset:offset + len(data)] = data
        (index / rel).write_bytes(bytes(raw))
    return edit


def _swap_indptr(a: np.ndarray) -> np.ndarray:
    a[1], a[2] = a[2] + 1, a[1]  # a column pointer that goes backwards
    return a


# (id, edit, file the message must name, refused at open (ask) too)
CORRUPTIONS = [
    ("indices-out-of-range", _npy("bm25/indices.npy", _set(0, 598)), "indices.npy", True),
    ("indices-negative", _npy("bm25/indices.npy", _set(-1, -3)), "indices.npy", True),
    ("indices-float-dtype", _npy("bm25/indices.npy", lambda a: a.astype(np.float32)), "indices.npy", True),
    ("indptr-float-dtype", _npy("bm25/indptr.npy", lambda a: a.astype(np.float64)), "indptr.npy", True),
    ("indices-2d", _npy("bm25/indices.npy", lambda a: a.reshape(-1, 1)), "indices.npy", True),
    ("robertson-nan", _npy("bm25/robertson.npy", _set(5, np.nan)), "robertson.npy", True),
    ("lucene-infinite", _npy("bm25/lucene.npy", _set(7, np.inf)), "lucene.npy", True),
    ("indptr-reordered", _npy("bm25/indptr.npy", _swap_indptr), "indptr.npy", True),
    ("indptr-empty", _npy("bm25/indptr.npy", lambda a: a[:0]), "indptr.npy", True),
    ("indptr-not-from-zero", _npy("bm25/indptr.npy", _set(0, 1)), "indptr.npy", True),
    ("offsets-short", _npy("passages/offsets.npy", lambda a: a[:-1]), "offsets.npy", True),
    ("offsets-backwards", _npy("passages/offsets.npy", _set(3, 1)), "offsets.npy", True),
    ("npy-magic-garbage", _patch("bm25/robertson.npy", 0, b"PK"), "robertson.npy", True),
    ("components-a-list", _manifest(lambda m: m.update(components=list(m["components"]))), "manifest.json",
     True),
    ("count-a-string", _manifest(lambda m: m["components"]["passages"].update(count="598")), "manifest.json",
     True),
    ("nnz-a-float", _manifest(lambda m: m["components"]["bm25"].update(nnz=1.5)), "manifest.json", True),
    ("metadata-sources-a-list", _manifest(lambda m: m["components"]["metadata"].update(sources=["CNBC"])),
     "manifest.json", True),
    ("manifest-deeply-nested", _write("manifest.json", b"[" * 100_000 + b"]" * 100_000), "manifest.json", True),
    ("manifest-not-json", _write("manifest.json", b"{\"format\": \"rootweaver-index\", "), "manifest.json", True),
    ("manifest-not-utf8", _write("manifest.json", b"\xff\xfe{}"), "manifest.json", True),
    ("manifest-files-missing", _manifest(lambda m: m.pop("files")), "manifest.json", True),
    ("manifest-sha-not-hex", _manifest(lambda m: m["files"]["bm25/vocab.json"].update(sha256="z" * 64)),
     "manifest.json", True),
    ("missing-indices", lambda index: (index / "bm25" / "indices.npy").unlink(), "indices.npy", True),
    ("missing-records", lambda index: (index / "passages" / "records.jsonl").unlink(), "records.jsonl", True),
    ("truncated-lucene", _truncate("bm25/lucene.npy"), "lucene.npy", True),
    ("score-changed-same-size", _flip_byte("bm25/robertson.npy", 40), "robertson.npy", False),
    ("record-byte-flipped", _flip_byte("passages/records.jsonl", 30), "records.jsonl", False),
]


def test_there_are_27_distinct_corruptions():
    assert len(CORRUPTIONS) == 27 and len({c[0] for c in CORRUPTIONS}) == 27


def _one_line_naming(err: str, name: str) -> None:
    assert err.startswith("rootweaver: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and name in err, (name, err)


@pytest.fixture
def corrupt(built, tmp_path, request):
    _, edit, _, _ = request.param
    copy = tmp_path / "idx"
    shutil.copytree(built, copy)
    edit(copy)
    return copy


@pytest.mark.parametrize("corrupt, case", [(c, c) for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS],
                         indirect=["corrupt"])
def test_verify_refuses_every_corruption_with_one_line_naming_the_file(corrupt, case, capsys):
    _, _, name, at_open = case
    assert main(["index", "verify", str(corrupt)]) == 2
    _one_line_naming(capsys.readouterr().err, name)
    code = main(["ask", "Who directed the film?", "--reader", "none", "--index", str(corrupt)])
    out, err = capsys.readouterr()
    if at_open:
        assert code == 2 and out == ""
        _one_line_naming(err, name)
    else:  # only a hash sees it: ask answers or refuses, but in one line and never with a traceback
        assert code in (0, 2) and "Traceback" not in err
        if code == 2:
            _one_line_naming(err, name)


def test_a_sound_index_verifies_and_opens(built, capsys):
    assert main(["index", "verify", str(built)]) == 0
    out = capsys.readouterr().out
    on_disk = sum(1 for f in built.rglob("*") if f.is_file() and f.name != "manifest.json")
    assert out.startswith(f"ok {built}: {on_disk} files") and "598 passages verified" in out
    manifest = verify_index(built)
    assert open_index(built).manifest == manifest
    for rel, entry in manifest.files.items():
        assert (built / rel).stat().st_size == entry["bytes"]


def test_a_damaged_record_read_at_query_time_names_the_records_file_and_line(built, tmp_path):
    copy = tmp_path / "idx"
    shutil.copytree(built, copy)
    records = copy / "passages" / "records.jsonl"
    data = bytearray(records.read_bytes())
    data[0] = ord("[")  # same size: passes the open checks, fails when passage 1 is read
    records.write_bytes(bytes(data))
    index = open_index(copy)
    with pytest.raises(ValueError, match=r"records\.jsonl:1: damaged record"):
        index.passages[0]

"""A folder scanned against an earlier scan's records: size and mtime as the fast check,
SHA-256 deciding, a same-size edit in the last clock tick caught, big files never hashed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rootweaver_innovations.conventions.registry import default_conventions
from rootweaver_innovations.documents import file_records
from rootweaver_innovations.documents.corpus import CorpusError
from rootweaver_innovations.documents.file_records import FileRecord, read_records, records_bytes, scan_folder
from rootweaver_innovations.documents.folders import ChunkingSettings

OLD_NS = 1_600_000_000 * 10**9  # 2020: long before any scan


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.txt").write_text("Ebla was a city in Syria.\n", encoding="utf-8")
    (folder / "b.md").write_text("# Mari\n\nMari was a city on the Euphrates.\n", encoding="utf-8")
    (folder / "c.bin").write_bytes(b"\x00\x01binary")
    for p in folder.iterdir():
        os.utime(p, ns=(OLD_NS, OLD_NS))
    return folder


def _scan(folder: Path, earlier=None, skips=None, settings=ChunkingSettings(), **kw):
    return list(scan_folder(folder, settings, default_conventions(), (skips if skips is not None else []).append,
                            {r.path: r for r in earlier or []}, **kw))


def _hashes(monkeypatch) -> list[str]:
    hashed: list[str] = []
    real = file_records._sha256
    monkeypatch.setattr(file_records, "_sha256", lambda p: hashed.append(os.path.basename(p)) or real(p))
    return hashed


def test_unchanged_files_are_neither_hashed_nor_read_and_a_changed_one_is(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    first = [s.record for s in _scan(folder)]
    assert [(r.path, r.chunks, r.skipped) for r in first] == [("a.txt", 1, None), ("b.md", 1, None),
                                                              ("c.bin", 0, "unsupported type .bin")]
    hashed, skips = _hashes(monkeypatch), []
    again = _scan(folder, first, skips, trusted_before_ns=time.time_ns())
    assert hashed == [] and all(s.passages is None for s in again) and [s.record for s in again] == first
    assert [s.reason for s in skips] == ["unsupported type .bin"]  # an unchanged skip is still reported
    (folder / "a.txt").write_text("Ebla was a city in northern Syria.\n", encoding="utf-8")
    changed = _scan(folder, first, trusted_before_ns=time.time_ns())
    assert hashed == ["a.txt"] and changed[0].passages[0].text == "Ebla was a city in northern Syria."
    assert [s.passages for s in changed[1:]] == [None, None]


def test_a_touched_file_with_the_same_bytes_is_kept_by_its_sha256(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    first = [s.record for s in _scan(folder)]
    os.utime(folder / "a.txt", ns=(OLD_NS + 5, OLD_NS + 5))
    hashed = _hashes(monkeypatch)
    again = _scan(folder, first, trusted_before_ns=time.time_ns())
    assert hashed == ["a.txt"] and again[0].passages is None and again[0].record.mtime_ns == OLD_NS + 5


def test_a_same_size_edit_within_the_last_clock_tick_is_caught_by_content(tmp_path):
    folder = _folder(tmp_path)
    now = time.time_ns()
    os.utime(folder / "a.txt", ns=(now, now))
    first = [s.record for s in _scan(folder)]
    (folder / "a.txt").write_text("Ebla was a town in Syria.\n", encoding="utf-8")  # same size ...
    os.utime(folder / "a.txt", ns=(now, now))  # ... and the same mtime: the clock had not ticked
    again = _scan(folder, first, trusted_before_ns=now + 10**9)
    assert again[0].passages is not None and again[0].passages[0].text == "Ebla was a town in Syria."


def test_a_file_over_the_limit_is_not_hashed(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    (folder / "big.txt").write_text("x" * 200, encoding="utf-8")
    hashed = _hashes(monkeypatch)
    records = {s.record.path: s.record for s in _scan(folder, settings=ChunkingSettings(max_file_bytes=100))}
    assert "big.txt" not in hashed and records["big.txt"].sha256 == ""
    assert records["big.txt"].skipped.startswith("larger than the 100-byte file limit")


def test_records_round_trip_and_a_bad_file_is_named(tmp_path):
    records = [FileRecord("a.txt", 3, 7, "0" * 64, 2), FileRecord("b.bin", 1, 8, "1" * 64, 0, "unsupported type .bin")]
    path = tmp_path / "files.json"
    path.write_bytes(records_bytes(records))
    assert read_records(path) == records
    path.write_bytes(records_bytes(records).replace(b'"chunks": [2, 0]', b'"chunks": [2, -1]'))
    with pytest.raises(ValueError, match=r"files.json: column 'chunks' holds a value of the wrong type"):
        read_records(path)
    path.write_bytes(b"[]")
    with pytest.raises(ValueError, match=r"files.json: not file records"):
        read_records(path)


def test_a_folder_with_no_chunk_left_is_refused_after_the_walk(tmp_path):
    folder = _folder(tmp_path)
    first = [s.record for s in _scan(folder)]
    (folder / "a.txt").unlink()
    (folder / "b.md").unlink()
    with pytest.raises(CorpusError, match=r"no document to index \(1 unsupported type .bin\)"):
        _scan(folder, first, trusted_before_ns=time.time_ns())

"""`rootweaver index update` against a full `index build` of a folder, and the equality of the two.

    python benchmarks/bench_index_update.py [--files 10000] [--paragraphs 1] [--seed 0] [--repeat 3] [--news 50]
                                            [--jsonl 1000000]

Writes a synthetic folder of ``--files`` documents (the bundled demo and HotpotQA paragraphs of
``bench_index.py``, ``--paragraphs`` of them a file, 1 by default: about 0.5 KB a file; two in three
Markdown with each paragraph's title as a heading, the others plain text; picked and shuffled
with ``--seed``; 100 files a subfolder), builds its index with the CLI in a child process, edits one file (a sentence added),
and runs ``rootweaver index update`` in a child process, each ``--repeat`` times (another file edited
each time; the disk synced before every timed run, so no run waits on the last one's writes).
The children write and reuse bytecode whatever ``PYTHONDONTWRITEBYTECODE`` says here, as a
user's Python does.
Prints the median wall times (and CPU time), their ratio (target: the CLI update under 5% of the build) and whether the updated index equals a
fresh build of the edited folder (the same manifest, so the same SHA-256 for every file) and
passes ``index verify``.

``--jsonl N`` does the same for one record of the synthetic JSONL corpus of ``bench_index.py``
(N records, generated once and cached under ``.cache/bench-index/``).

``--news N`` then checks answers on real news: the bundled MultiHop-RAG articles
(``evals/data/multihoprag``, as ``python -m evals.news`` writes them) are indexed, the first
evidence article of the first dev question is edited (a paragraph added), the index is updated,
and the first N dev questions are asked of the updated index and of a fresh build
(``rootweaver ask --index --json --reader none``); prints how many answers differ (must be 0) and how
many the edit changed against the index before it. Exit 1 if any check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_index import _perturb, _sources, make_corpus  # noqa: E402 - the corpus bench_index grows

CLI = [sys.executable, "-m", "rootweaver_capabilities.cli.main"]


def make_folder(folder: Path, files: int, seed: int, paragraphs: int = 1) -> None:
    """``files`` documents of ``paragraphs`` paragraphs each under ``folder``, picked and ordered
    by ``seed``; the first paragraph's title heads the file, the others head their sections."""
    src = _sources()
    rng = random.Random(seed)
    need = files * paragraphs
    order = [(copy, i) for copy in range(need // len(src) + 1) for i in range(len(src))][:need]
    rng.shuffle(order)
    for n in range(files):
        parts = []
        for copy, i in order[n * paragraphs:(n + 1) * paragraphs]:
            s = src[i]
            title = _perturb(s["title"], copy) if copy else s["title"]
            parts.append((title, " ".join(_perturb(t, copy) if copy else t for t in s["sentences"])))
        md = n % 3 != 2
        slug = re.sub(r"\W+", "-", parts[0][0].lower()).strip("-")[:40] or "doc"
        path = folder / f"{n // 100:03d}" / f"{n:05d}-{slug}.{'md' if md else 'txt'}"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"{'## ' if md else ''}{t}\n\n{x}" for t, x in parts[1:])
        head = f"# {parts[0][0]}" if md else parts[0][0]
        path.write_text(f"{head}\n\n{parts[0][1]}\n" + (f"\n{body}\n" if body else ""), encoding="utf-8")


def _env() -> dict[str, str]:
    """The children's environment: this one, with the repository on the path, and without
    ``PYTHONDONTWRITEBYTECODE``, so the CLI runs as Python does on a user's machine: compiling
    a module once and loading its bytecode after that (the first build writes it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def cli(*args: str) -> tuple[float, float, str]:
    """Wall and CPU seconds of the CLI in a child process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*CLI, *args], cwd=ROOT, env=_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"rootweaver {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done.stdout.strip()


_CALL = """
import json, sys, time
from rootweaver_innovations.compaction.budget import default_token_counter
from rootweaver_innovations.retrieval.index import build_index
from rootweaver_innovations.retrieval.index_update import update_index
import langchain_text_splitters
default_token_counter().count("warm")  # the chunker's imports and tokenizer: loaded before the clock starts
start, cpu = time.perf_counter(), time.process_time()
build_index(*sys.argv[2:]) if sys.argv[1] == "build" else update_index(*sys.argv[2:])
print(json.dumps([time.perf_counter() - start, time.process_time() - cpu]))
"""


def call(*args: str) -> tuple[float, float]:
    """Wall and CPU seconds of ``build_index`` or ``update_index`` alone, in a child process
    that loaded the chunker first."""
    done = subprocess.run([sys.executable, "-c", _CALL, *args], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {done.stderr.strip()[-500:]}")
    wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu


def same_as_fresh(index: Path, source: Path, fresh: Path) -> bool:
    """Whether ``index`` passes verify and has the manifest of a fresh build of ``source``."""
    from rootweaver_innovations.retrieval.index import build_index, verify_index

    shutil.rmtree(fresh, ignore_errors=True)
    build_index(source, fresh)
    verify_index(index)
    return json.loads((index / "manifest.json").read_text()) == json.loads((fresh / "manifest.json").read_text())


def _edit(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\nIt was revised in 2024 by the archive.\n", encoding="utf-8")


def _median(runs: list[tuple[float, ...]]) -> tuple[float, ...]:
    return sorted(runs)[len(runs) // 2]


def _timed(build: Callable[[], tuple], edits: Sequence[Callable[[], None]], update: Callable[[], tuple],
           index: Path) -> tuple[list[tuple], list[tuple]]:
    """``build()`` into ``index`` once per edit (removed first), then each edit followed by
    ``update()``; the disk synced before every timed call. Both calls' results, in order."""
    builds, updates = [], []
    for _ in edits:
        shutil.rmtree(index, ignore_errors=True)
        os.sync()
        builds.append(build())
    for edit in edits:
        edit()
        os.sync()
        updates.append(update())
    return builds, updates


def folder_run(files: int, seed: int, paragraphs: int, repeat: int, work: Path) -> bool:
    folder = work / "folder"
    make_folder(folder, files, seed, paragraphs)
    documents = sorted(folder.rglob("*.md"))
    edited = [documents[len(documents) * (k + 1) // (2 * repeat + 1)] for k in range(2 * repeat)]
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(f"folder: {files:,} files of {paragraphs} paragraph(s), {size / 1e6:.1f} MB (seed {seed}); "
          f"median of {repeat} runs each, a different file edited before each update, the disk synced before "
          "each timed run")
    builds, updates = _timed(partial(cli, "index", "build", str(folder), "--out", str(work / "cli.idx")),
                             [partial(_edit, path) for path in edited[:repeat]],
                             partial(cli, "index", "update", str(work / "cli.idx")), work / "cli.idx")
    equal = same_as_fresh(work / "cli.idx", folder, work / "fresh.idx")
    (build_wall, build_cpu, built), (update_wall, update_cpu, updated) = _median(builds), _median(updates)
    print("CLI (cold process: interpreter, imports, chunker):")
    print(f"  rootweaver index build   {build_wall:6.2f} s wall ({build_cpu:.2f} s CPU)  [{built}]")
    print(f"  rootweaver index update  {update_wall:6.2f} s wall ({update_cpu:.2f} s CPU)  [{updated}]")
    print(f"  update / build: {100 * update_wall / build_wall:.1f}% (target < 5%; runs: build "
          f"{', '.join(f'{b[0]:.2f}' for b in builds)} s, update {', '.join(f'{u[0]:.2f}' for u in updates)} s)")
    call_builds, call_updates = _timed(partial(call, "build", str(folder), str(work / "call.idx")),
                                       [partial(_edit, path) for path in edited[repeat:]],
                                       partial(call, "update", str(work / "call.idx")), work / "call.idx")
    equal = same_as_fresh(work / "call.idx", folder, work / "fresh.idx") and equal
    call_build, call_update = _median(call_builds), _median(call_updates)
    print("build_index / update_index alone (chunker loaded before the clock):")
    print(f"  build_index   {call_build[0]:6.2f} s wall ({call_build[1]:.2f} s CPU)")
    print(f"  update_index  {call_update[0]:6.2f} s wall ({call_update[1]:.2f} s CPU)")
    print(f"  update / build: {100 * call_update[0] / call_build[0]:.1f}% (target < 5%)")
    print(f"updated index == fresh build of the edited folder (manifest, so every file's SHA-256), verify ok: {equal}")
    return equal and update_wall / build_wall < 0.05


def jsonl_run(passages: int, repeat: int, work: Path) -> bool:
    """One record edited in the synthetic JSONL corpus of ``bench_index.py`` (``passages`` records)."""
    corpus = work / "corpus.jsonl"
    shutil.copyfile(make_corpus(passages), corpus)
    lines = corpus.read_bytes().splitlines(keepends=True)
    print(f"JSONL corpus: {passages:,} records, {corpus.stat().st_size / 1e6:.1f} MB; median of {repeat} runs each, "
          "a different record edited before each update, the disk synced before each timed run")

    def edit(at: int) -> None:
        record = json.loads(lines[at])
        record["sentences"] = [*record["sentences"], "It was revised in 2024 by the archive."]
        lines[at] = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        corpus.write_bytes(b"".join(lines))

    builds, updates = _timed(partial(cli, "index", "build", str(corpus), "--out", str(work / "jsonl.idx")),
                             [partial(edit, len(lines) * (k + 1) // (repeat + 1)) for k in range(repeat)],
                             partial(cli, "index", "update", str(work / "jsonl.idx")), work / "jsonl.idx")
    equal = same_as_fresh(work / "jsonl.idx", corpus, work / "jsonl-fresh.idx")
    (build_wall, build_cpu, built), (update_wall, update_cpu, updated) = _median(builds), _median(updates)
    print(f"  rootweaver index build   {build_wall:6.2f} s wall ({build_cpu:.2f} s CPU)  [{built}]")
    print(f"  rootweaver index update  {update_wall:6.2f} s wall ({update_cpu:.2f} s CPU)  [{updated}]")
    print(f"  update / build: {100 * update_wall / build_wall:.1f}% (runs: build {', '.join(f'{b[0]:.2f}' for b in builds)}"
          f" s, update {', '.join(f'{u[0]:.2f}' for u in updates)} s); equals a fresh build, verify ok: {equal}")
    return equal


def news_run(limit: int, work: Path) -> bool:
    from evals.documents_folder import _ask
    from evals.news import load_questions, write_articles
    from rootweaver_capabilities.cli.main import main as rootweaver
    from rootweaver_innovations.defaults import DEFAULT_CONVENTIONS

    folder, index, fresh = work / "articles", work / "articles.idx", work / "articles-fresh.idx"
    articles = write_articles(folder)
    questions = load_questions(limit)
    with contextlib.redirect_stdout(io.StringIO()):
        if rootweaver(["index", "build", str(folder), "--out", str(index)]) != 0:
            return False

    def answers(idx: Path) -> list[dict]:
        return [_ask(q.question, idx, 10, DEFAULT_CONVENTIONS) for q in questions]

    before = answers(index)
    edited = folder / questions[0].evidence_files[0]
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nThis article was updated with a correction "
                      "from the newsroom.\n", encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        if rootweaver(["index", "update", str(index)]) != 0:
            return False
    equal = same_as_fresh(index, folder, fresh)
    updated, rebuilt = answers(index), answers(fresh)
    differ = sum(a != b for a, b in zip(updated, rebuilt))
    print(f"news: {articles} MultiHop-RAG articles; edited {edited.name}; first {len(questions)} dev questions, "
          f"--reader none: {differ} answers differ between the updated index and a fresh build "
          f"({sum(a != b for a, b in zip(before, updated))} changed by the edit); same files: {equal}")
    return equal and differ == 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=10_000, help="files in the folder (0: skip the folder)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--paragraphs", type=int, default=1, help="paragraphs per file (1: about 0.5 KB a file)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of each command (the median is shown)")
    p.add_argument("--news", type=int, default=50, help="dev questions of the news check (0: skip it)")
    p.add_argument("--jsonl", type=int, default=0, metavar="N",
                   help="also one record edited in bench_index.py's synthetic corpus of N records (0: skip it)")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-index-update-"))
    try:
        ok = folder_run(args.files, args.seed, args.paragraphs, max(1, args.repeat), work) if args.files else True
        if args.jsonl:
            ok = jsonl_run(args.jsonl, max(1, args.repeat), work) and ok
        if args.news:
            ok = news_run(args.news, work) and ok
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

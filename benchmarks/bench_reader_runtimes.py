"""Seconds per answer of the embedded reader on its two llama.cpp runtimes, same GGUF, same threads,
through the product's own runtime code (rootweaver_capabilities.readers.runtimes).

    python benchmarks/bench_reader_runtimes.py              # idle
    python benchmarks/bench_reader_runtimes.py --busy 2     # beside two busy processes
    python benchmarks/bench_reader_runtimes.py --flash-attention off

Each runtime runs in its own child process (they are interleaved: A B A B ...), loads the
model and answers ``--rounds`` chat prompts of about 1,000 tokens (45 numbered facts, a
question) for at most 16 tokens at temperature 0. Every round changes the facts' first line,
so no prompt prefix is reused from the round before (both runtimes cache a repeated prompt,
which turns 12 s into 0.2 s). Prints each child's load time, its rounds' seconds and
answers, then per runtime the median seconds per answer and the ratio to llama-cpp-python
(the baseline) measured in the same run. ``--busy N`` starts N pure-Python busy loops for
the duration and stops them by PID.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODEL = "~/.cache/rootweaver/models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf"
BASELINE, CANDIDATE = "llama-cpp-python", "xllamacpp"


def messages(r: int) -> list[dict[str, str]]:
    facts = " ".join(f"Fact {i}: The river number {i} flows past the town of Graz-{i + r} in Austria." for i in range(45))
    return [{"role": "system", "content": f"Round {r}. You answer questions using only the given context. Reply with "
                                          "the shortest possible answer."},
            {"role": "user", "content": f"Context:\n{facts}\n\nQuestion: Which town does river number 17 flow past?"
                                        "\nAnswer:"}]


def child(runtime: str, model: str, threads: int, rounds: int, first: int, flash_attention: bool) -> dict:
    from pathlib import Path

    from rootweaver_capabilities.readers.chat import render_chatml
    from rootweaver_capabilities.readers.runtimes import load_runtime

    start = time.perf_counter()
    loaded = load_runtime(runtime, Path(os.path.expanduser(model)), n_ctx=2048, n_threads=threads,
                          flash_attention=flash_attention)
    load = time.perf_counter() - start
    seconds, answers = [], []
    for r in range(first, first + rounds):
        start = time.perf_counter()
        prompt = loaded.tokenize(render_chatml(messages(r)))
        out = loaded.generate(prompt, temperature=0.0, max_tokens=16, seed=None, json_mode=False, halt=lambda: False)
        seconds.append(time.perf_counter() - start)
        answers.append(out.text.strip())
    return {"runtime": runtime, "load_s": load, "seconds": seconds, "answers": answers}


def _busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=MODEL, help="the GGUF file (default: the embedded reader's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="answers per child process")
    ap.add_argument("--pairs", type=int, default=2, help="child processes per runtime, interleaved")
    ap.add_argument("--busy", type=int, default=0, help="busy processes beside the benchmark")
    ap.add_argument("--flash-attention", choices=("on", "off"), default="on", help="llm.flash_attention (default on)")
    ap.add_argument("--child", choices=(BASELINE, CANDIDATE), help=argparse.SUPPRESS)
    ap.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.model, args.threads, args.rounds, args.first,
                               args.flash_attention == "on")))
        return 0
    busy = _busy(args.busy)
    results: dict[str, list[dict]] = {BASELINE: [], CANDIDATE: []}
    try:
        for pair in range(args.pairs):
            for runtime in (BASELINE, CANDIDATE):
                cmd = [sys.executable, __file__, "--child", runtime, "--model", args.model, "--threads",
                       str(args.threads), "--rounds", str(args.rounds), "--first", str(pair * args.rounds),
                       "--flash-attention", args.flash_attention]
                done = subprocess.run(cmd, capture_output=True, text=True, check=True)
                res = json.loads(done.stdout.strip().splitlines()[-1])
                results[runtime].append(res)
                print(f"{runtime:17s} load {res['load_s']:.2f} s  " + "  ".join(
                    f"{s:.2f} s {a[:24]!r}" for s, a in zip(res["seconds"], res["answers"])), flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    medians = {rt: statistics.median(s for res in runs for s in res["seconds"]) for rt, runs in results.items()}
    same = sum(a == b for x, y in zip(results[BASELINE], results[CANDIDATE]) for a, b in zip(x["answers"], y["answers"]))
    total = sum(len(res["answers"]) for res in results[BASELINE])
    print(f"flash attention {args.flash_attention}, busy processes {args.busy}, "
          f"load average {os.getloadavg()[0]:.2f}; answers equal {same}/{total}")
    for rt in (BASELINE, CANDIDATE):
        print(f"{rt:17s} median {medians[rt]:.2f} s per answer = {medians[rt] / medians[BASELINE]:.3f}x "
              f"{BASELINE}; median load {statistics.median(r['load_s'] for r in results[rt]):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Seconds per answer of the embedded reader's GGUF under two llama.cpp runtimes: llama-cpp-python
(today's, compiled at install) and xllamacpp (a prebuilt abi3 wheel), same file, same threads.

    python benchmarks/bench_reader_runtimes.py --runtime llama-cpp-python
    python benchmarks/bench_reader_runtimes.py --runtime xllamacpp     # in a venv with `pip install xllamacpp`

Each of ``--rounds`` asks one chat prompt of about 1,000 tokens (45 numbered facts, a question)
for at most 16 tokens at temperature 0; every round changes the facts' first line so no prompt
prefix is reused from the round before (both runtimes cache a repeated prompt, which turns
12 s into 0.2 s). Prints the load time, each round's seconds and answer, and the median.
Run both in the same minutes, idle or beside the same busy processes: the figure is their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

MODEL = "~/.cache/rootweaver/models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf"


def messages(r: int) -> list[dict[str, str]]:
    facts = " ".join(f"Fact {i}: The river number {i} flows past the town of Graz-{i + r} in Austria." for i in range(45))
    return [{"role": "system", "content": f"Round {r}. You answer questions using only the given context. Reply with "
                                          "the shortest possible answer."},
            {"role": "user", "content": f"Context:\n{facts}\n\nQuestion: Which town does river number 17 flow past?"
                                        "\nAnswer:"}]


def llama_cpp_python(path: str, threads: int):
    from llama_cpp import Llama

    model = Llama(path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False)
    return lambda r: model.create_chat_completion(messages=messages(r), max_tokens=16,
                                                  temperature=0)["choices"][0]["message"]["content"]


def xllamacpp(path: str, threads: int):
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = path
    params.n_ctx, params.n_batch, params.n_parallel = 2048, 512, 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    server = xlc.Server(params)
    return lambda r: server.handle_chat_completions(
        {"messages": messages(r), "max_tokens": 16, "temperature": 0})["choices"][0]["message"]["content"]


def main(argv: list[str] | None = None) -> int:
    import os

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", choices=("llama-cpp-python", "xllamacpp"), required=True)
    ap.add_argument("--model", default=MODEL, help="the GGUF file (default: the embedded reader's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    ask = (llama_cpp_python if args.runtime == "llama-cpp-python" else xllamacpp)(os.path.expanduser(args.model),
                                                                                   args.threads)
    load = time.perf_counter() - start
    seconds = []
    for r in range(args.rounds):
        start = time.perf_counter()
        answer = ask(r)
        seconds.append(time.perf_counter() - start)
        print(f"round {r}: {seconds[-1]:.2f} s  {answer.strip()[:40]!r}")
    print(f"{args.runtime}: load {load:.2f} s, median {statistics.median(seconds):.2f} s per answer, "
          f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Do the embedded reader's two llama.cpp runtimes give the same answers? The demo's golden
questions through ``rootweaver ask --json``, once per runtime.

    python benchmarks/golden_runtime_answers.py                        # both runtimes
    python benchmarks/golden_runtime_answers.py --python-for llama-cpp-python=/other/venv/bin/python
    python benchmarks/golden_runtime_answers.py --flash-attention off  # llm.flash_attention: false

Each question is asked in a process of its own (no prompt cache carried over), with a
config file that sets only ``llm.provider: local``, ``llm.runtime`` and
``llm.flash_attention``; everything else is the product's default. ``--python-for
RUNTIME=PYTHON`` runs that runtime's questions with another interpreter (a venv where it is
installed); this checkout comes first on its ``PYTHONPATH`` so both run the same code. Prints,
per runtime, the answers that are exact matches of the gold answer, then how many answers are
equal across the runtimes and each question where they differ. Needs both runtimes installed and the model in the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from evals.diagnostics import exact_match
from rootweaver_capabilities.cli.argtypes import positive_int
from rootweaver_innovations.documents.demo import load_questions

RUNTIMES = ("llama-cpp-python", "xllamacpp")
ROOT = Path(__file__).resolve().parents[1]


def answer(python: str, config: Path, question: str) -> str:
    """The answer text of one ``rootweaver ask --json`` in a new process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([python, "-m", "rootweaver_capabilities.cli.main", "ask", question, "--json",
                          "--config", str(config)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit(f"{python}: rootweaver ask exited {out.returncode} on {question!r}: {last}")
    return json.loads(out.stdout)["answer"]["text"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python-for", action="append", default=[], metavar="RUNTIME=PYTHON")
    ap.add_argument("--questions", type=positive_int, default=None, help="the first N golden questions only")
    ap.add_argument("--flash-attention", choices=("on", "off"), default="on", help="llm.flash_attention (default on)")
    args = ap.parse_args()
    python = dict.fromkeys(RUNTIMES, sys.executable)
    for item in args.python_for:
        runtime, _, path = item.partition("=")
        if runtime not in python or not path:
            ap.error(f"--python-for takes RUNTIME=PYTHON with RUNTIME one of {', '.join(RUNTIMES)}, got {item!r}")
        python[runtime] = path
    questions = load_questions()[: args.questions]
    answers: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for runtime in RUNTIMES:
            config = Path(tmp) / f"{runtime}.yaml"
            config.write_text(f"llm:\n  provider: local\n  runtime: {runtime}\n"
                              f"  flash_attention: {str(args.flash_attention == 'on').lower()}\n", encoding="utf-8")
            answers[runtime] = [answer(python[runtime], config, q.question) for q in questions]
            right = sum(exact_match(a, q.answer) for a, q in zip(answers[runtime], questions) if q.answer)
            print(f"{runtime}: {right:.0f} of {len(questions)} exact matches of the gold answer", flush=True)
    equal = [a == b for a, b in zip(*answers.values())]
    print(f"equal answers: {sum(equal)} of {len(questions)}")
    for q, same, *pair in zip(questions, equal, *answers.values()):
        if not same:
            print(f"  {q.question!r}: " + " / ".join(f"{r} {a!r}" for r, a in zip(RUNTIMES, pair)) + f" (gold {q.answer!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

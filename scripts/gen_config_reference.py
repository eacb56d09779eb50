"""Write ``docs/configuration.md``, the configuration reference, from the config schema.

Every knob with its type, default, allowed values and description, grouped by section, after
an introduction and an example YAML (checked against the schema before it is written). The
schema (:mod:`rootweaver_capabilities.config.schema`) is the one source: edit a knob there, then

    python scripts/gen_config_reference.py            # rewrite docs/configuration.md
    python scripts/gen_config_reference.py --check    # exit 1 when the file is out of date

``tests/capability/test_config_reference.py`` fails when the committed file differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from rootweaver_capabilities.config import Knob, MultiHopConfig, sections
from rootweaver_capabilities.config.validate import TYPE_NAMES

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "configuration.md"
COMMAND = "python scripts/gen_config_reference.py"

INTRO = f"""\
The capability reads one YAML file: `rootweaver serve --config FILE`, `rootweaver mcp --config FILE`,
`rootweaver batch --config FILE` and `rootweaver ask --config FILE`. Without `--config`, every key
takes its default, the values `configs/retrieval/multi_hop.yaml` spells out (no file is read, so
the commands work from any directory). Every key is optional: a missing key takes its default, while
an unknown key, a wrong type, an impossible value or a file that does not exist is refused at start
with one line naming the file and the dotted key. Secrets never go in the file: a key ending in
`_env` names the environment variable that holds the secret. The options of `rootweaver ask` and
`rootweaver index build` that stand for a key have the defaults below; `ask --config FILE` takes
every setting from the file and refuses those options. This page is generated from the schema by
`{COMMAND}`; do not edit it by hand.
"""

EXAMPLE = """\
max_hops: 6
retriever:
  index: out/wiki-index            # built by `rootweaver index build`
compaction:
  strategy: evidence
  budget: 200                      # reader tokens
llm:
  provider: openai
  base_url: http://127.0.0.1:8765/v1
  api_key_env: ROOTWEAVER_LLM_API_KEY
service:
  request_timeout_s: 20
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _value(value: Any) -> str:
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _type(knob: Knob) -> str:
    name = TYPE_NAMES[knob.rule.kind].removeprefix("an ").removeprefix("a ")
    return f"{name} or null" if knob.rule.nullable else name


def _allowed(knob: Knob) -> str:
    choices = knob.rule.allowed()
    if choices:
        text = ", ".join(f"`{c}`" for c in choices)
        return f"any of {text}" if knob.rule.kind == "names" else text
    return knob.rule.rule.removeprefix("must be ") if knob.rule.rule else ""


def render() -> str:
    """The whole of ``docs/configuration.md``."""
    MultiHopConfig.from_mapping(yaml.safe_load(EXAMPLE), source="the example")  # never show an invalid example
    lines = ["# Configuration reference", "", INTRO.rstrip("\n"), "", "## Example", "", "```yaml",
             EXAMPLE.rstrip("\n"), "```", ""]
    for section in sections():
        lines += [f"## `{section.key}`" if section.key else "## Top level", "", _cell(section.doc), "",
                  "| Key | Type | Default | Allowed | Description |", "|---|---|---|---|---|"]
        lines += [f"| `{k.key}` | {_type(k)} | {_value(k.default)} | {_cell(_allowed(k))} | {_cell(k.doc)} |"
                  for k in section.knobs]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when the file is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.is_file() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is out of date; run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write the engine flag table of every recorded vLLM release.

Why: the operator decides what an argv does only from operator/specdecode/api/engine_flags/
vllm-<release>.json (read by api/engine_flag_table.py); each is generated from the release's
own recorded parser (tests/data/engine-arg-spellings.vllm-<release>.json, made by
tools/vllm_parse_spellings.py with vLLM's virtualenv) and the hand classification in
api/engine_flag_classes.py. Run from the repository root after recording a release or
classifying a destination:

    .venv/bin/python tools/engine_flag_table.py

It prints the destinations new to a table: each is written as `free` unless classified, so
read vLLM's source for each before committing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specdecode.api.engine_flag_table import table_of, table_path

REPO = Path(__file__).resolve().parents[1]
RECORDINGS = sorted((REPO / "tests/data").glob("engine-arg-spellings.vllm-*.json"))


def _text(table: dict[str, Any]) -> str:
    """One destination per line, so a diff shows each one added, dropped or reclassified."""
    lines = [json.dumps(flag) for flag in table["flags"]]
    return f'{{"vllm": {json.dumps(table["vllm"])}, "flags": [\n' + ",\n".join(lines) + "\n]}\n"


def main() -> None:
    for recording_path in RECORDINGS:
        table = table_of(json.loads(recording_path.read_text()))
        out = table_path(table["vllm"])
        before = (
            {f["dest"] for f in json.loads(out.read_text())["flags"]} if out.exists() else set()
        )
        new = [flag["dest"] for flag in table["flags"] if flag["dest"] not in before]
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(_text(table))
        print(f"wrote {out.relative_to(REPO)}: {len(table['flags'])} destinations")
        if new and before:
            print(f"  new since the last table (read vLLM's source for each): {new}")


if __name__ == "__main__":
    main()

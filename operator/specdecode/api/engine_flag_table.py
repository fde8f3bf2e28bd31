"""The one table of what `vllm serve` does with each destination, per recorded release.

Why one table: the extraArgs refusal, the CRD's CEL, the render guard and the adoption
reader must agree on which flags matter; hand-written lists missed `--spec-method`. Each
release's table is generated from its own recorded parser and `engine_flag_classes`.
Pure and stdlib only. More: docs/internals.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdecode.api.engine_flag_classes import CLASSIFIED, FlagClass

TABLE_DIR = Path(__file__).resolve().with_name("engine_flags")
TABLE_PREFIX = "vllm-"


@dataclass(frozen=True)
class Flag:
    """One argparse destination of a release's `serve` parser and its class."""

    dest: str
    options: tuple[str, ...]
    flag_class: FlagClass


def table_of(recording: Mapping[str, Any]) -> dict[str, Any]:
    """The table a recorded parser (tools/vllm_parse_spellings.py's output) makes: every
    destination, its option strings, its class. What the tool writes and the test checks."""
    flags = [
        {
            "dest": action["dest"],
            "options": list(action["options"]),
            "class": str(_class_of(action["dest"])),
        }
        for action in recording["actions"]
    ]
    return {"vllm": recording["vllm"], "flags": flags}


def _class_of(dest: str) -> FlagClass:
    classified = CLASSIFIED.get(dest)
    return FlagClass.FREE if classified is None else classified.flag_class


def table_path(release: str) -> Path:
    """Where the table of `release` is kept."""
    return TABLE_DIR / f"{TABLE_PREFIX}{release}.json"


def _load() -> dict[str, tuple[Flag, ...]]:
    tables: dict[str, tuple[Flag, ...]] = {}
    for path in sorted(TABLE_DIR.glob(f"{TABLE_PREFIX}*.json")):
        data = json.loads(path.read_text())
        tables[data["vllm"]] = tuple(
            Flag(flag["dest"], tuple(flag["options"]), FlagClass(flag["class"]))
            for flag in data["flags"]
        )
    return tables


# release -> its flags, as committed under engine_flags/.
TABLES: dict[str, tuple[Flag, ...]] = _load()


def non_free_options() -> dict[str, tuple[str, ...]]:
    """Every non-free destination of any recorded release -> the union of its option
    strings over the releases, in CLASSIFIED's order (refusing a spelling a release lacks
    costs nothing: that release would not read it as another flag)."""
    found: dict[str, list[str]] = {}
    for flags in TABLES.values():
        for flag in flags:
            if flag.flag_class is FlagClass.FREE:
                continue
            options = found.setdefault(flag.dest, [])
            options += [option for option in flag.options if option not in options]
    return {dest: tuple(found[dest]) for dest in CLASSIFIED if found.get(dest)}

"""An oracle for what `vllm serve` would set from an argv, built independently of
`specdecode.api.engine_args`: vLLM 0.32.0's argv rewriting (`FlexibleArgumentParser.
parse_args`, transcribed step by step) in front of Python's own argparse, loaded with the
`serve` parser's real actions as tools/vllm_parse_spellings.py recorded them from vLLM
(tests/data/engine-arg-spellings.vllm-0.32.0.json). The real vLLM cannot be imported in
the unit tests' environment; this is the closest stand-in, and the spellings table checks
it against the recorded real results.
"""

from __future__ import annotations

import argparse
import json
import re
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

FIXTURE = Path(__file__).resolve().parents[2] / "data/engine-arg-spellings.vllm-0.32.0.json"


def recorded() -> dict[str, Any]:
    """The checked-in record of the real parser."""
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


class _Refusal(Exception):
    """What vLLM would print before exiting."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Refusal(message)


@cache
def _argparse() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vllm serve",
        allow_abbrev=recorded()["allow_abbrev"],
        add_help=False,
        exit_on_error=False,
    )
    for action in recorded()["actions"]:
        options, dest, nargs = action["options"], action["dest"], action["nargs"]
        if not options:
            parser.add_argument(dest, nargs=nargs, default=argparse.SUPPRESS)
        elif nargs == 0:
            parser.add_argument(*options, dest=dest, action="store_true", default=argparse.SUPPRESS)
        else:
            parser.add_argument(*options, dest=dest, nargs=nargs, default=argparse.SUPPRESS)
    return parser


def _rewrite(args: list[str]) -> list[str]:
    """vLLM's rewriting before argparse: `--a_b` -> `--a-b` up to the first `.`, `-O3`,
    and dotted `--key.sub value` merged into `--key '{"sub": value}'` at the end."""
    processed: list[str] = []
    for index, arg in enumerate(args):
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            key = re.sub(r"(?<=--)[^.]*", lambda m: m.group(0).replace("_", "-"), key, count=1)
            processed.append(key + eq + value)
        elif arg.startswith("-O") and arg != "-O":
            processed += ["--optimization-level", arg[3:] if arg[2:3] == "=" else arg[2:]]
        elif arg == "-O" and index + 1 < len(args) and args[index + 1] in {"0", "1", "2", "3"}:
            processed.append("--optimization-level")
        else:
            processed.append(arg)
    merged: dict[str, dict[str, Any]] = {}
    out: list[str] = []
    skip = -1
    for index, arg in enumerate(processed):
        if index == skip:
            continue
        if not (arg.startswith("-") and "." in arg) or (
            "=" in arg and "." not in arg.split("=", 1)[0]
        ):
            out.append(arg)
            continue
        if "=" in arg:
            dotted, value = arg.split("=", 1)
        else:
            dotted = arg
            value, skip = processed[index + 1], index + 1  # IndexError: vLLM fails too
        key, *keys = dotted.rstrip("+").split(".")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        node = merged.setdefault(key, {})
        for part in keys[:-1]:
            node = node.setdefault(part, {})
        node[keys[-1]] = parsed
    for key, tree in merged.items():
        out += [key, json.dumps(tree)]
    return out


def destinations(argv: list[str]) -> dict[str, Any] | None:
    """What `vllm serve <argv>` sets (destination -> value), or None if vLLM would refuse
    the argv. `--config FILE` is reported as the destination `config` (vLLM would splice
    the file's flags in; what they set cannot be known here)."""
    try:
        args = _rewrite(list(argv))
        namespace, unknown = _argparse().parse_known_args(args)
    except (argparse.ArgumentError, _Refusal, IndexError):
        return None
    return None if unknown else dict(vars(namespace))

"""`vllm serve` command line, as vLLM 0.11.2 parses it (the subset the simulator knows).

Like vLLM's FlexibleArgumentParser: `--foo_bar` == `--foo-bar`, booleans take
`--x/--no-x`, `--max-model-len 32k` style sizes, `--speculative-config.key value`
nested keys, a malformed JSON value is an argparse error (exit 2), and any flag not
listed here is "unrecognized" (exit 2). Flags that change nothing in a simulation are
accepted and ignored.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from typing import Any

DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([kmgt])$", re.IGNORECASE)


def human_readable_int(value: str) -> int:
    """'32k' = 32000, '32K' = 32768 (decimal lower case, binary upper case), or a plain int."""
    match = _SIZE.match(value.strip())
    if not match:
        return int(value)
    number, suffix = float(match.group(1)), match.group(2)
    power = "kmgt".index(suffix.lower()) + 1
    base = 1000 if suffix.islower() else 1024
    return int(number * base**power)


def _optional_json(value: str) -> Any:
    """vLLM's optional_type(json.loads): '' / 'None' mean unset, bad JSON is an argparse error."""
    if value in ("", "None"):
        return None
    try:
        return json.loads(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"Value {value} cannot be converted to {json.loads}."
        ) from error


_VALUE_FLAGS: tuple[tuple[tuple[str, ...], Callable[[str], Any], Any], ...] = (
    (("--host",), str, None),
    (("--port",), int, 8000),
    (("--uds",), str, None),
    (("--uvicorn-log-level",), str, "info"),
    (("--tensor-parallel-size", "-tp"), int, 1),
    (("--pipeline-parallel-size", "-pp"), int, 1),
    (("--data-parallel-size", "-dp"), int, 1),
    (("--max-model-len",), human_readable_int, None),
    (("--max-num-seqs",), int, None),
    (("--max-num-batched-tokens",), human_readable_int, None),
    (("--seed",), int, None),
    (("--dtype",), str, "auto"),
    (("--gpu-memory-utilization",), float, 0.9),
    (("--revision",), str, None),
    (("--code-revision",), str, None),
    (("--tokenizer",), str, None),
    (("--tokenizer-mode",), str, "auto"),
    (("--tokenizer-revision",), str, None),
    (("--quantization", "-q"), str, None),
    (("--kv-cache-dtype",), str, "auto"),
    (("--block-size",), int, None),
    (("--swap-space",), float, 4),
    (("--load-format",), str, "auto"),
    (("--download-dir",), str, None),
    (("--max-logprobs",), int, 20),
    (("--generation-config",), str, "auto"),
    (("--chat-template",), str, None),
    (("--response-role",), str, "assistant"),
    (("--root-path",), str, None),
    (("--tool-call-parser",), str, None),
    (("--reasoning-parser",), str, None),
    (("--distributed-executor-backend",), str, None),
    (("--show-hidden-metrics-for-version",), str, None),
    (("--hf-config-path",), str, None),
    (("--compilation-config", "-O"), str, None),
    (("--speculative-config",), _optional_json, None),
)
_BOOL_FLAGS: tuple[str, ...] = (
    "--trust-remote-code",
    "--enforce-eager",
    "--enable-prefix-caching",
    "--enable-chunked-prefill",
    "--disable-custom-all-reduce",
    "--enable-auto-tool-choice",
    "--enable-expert-parallel",
    "--disable-sliding-window",
    "--enable-prompt-tokens-details",
    "--disable-fastapi-docs",
    "--enable-log-requests",
)
_STORE_TRUE_FLAGS: tuple[str, ...] = (
    "--disable-log-stats",
    "--disable-log-requests",
    "--disable-uvicorn-access-log",
)


def build_parser() -> argparse.ArgumentParser:
    """`vllm` with a `serve` subcommand carrying the flags above."""
    parser = argparse.ArgumentParser(prog="vllm", description="vLLM CLI (specdecode simulator)")
    parser.add_argument("-v", "--version", action="store_true")
    commands = parser.add_subparsers(dest="subcommand")
    serve = commands.add_parser(
        "serve", usage="vllm serve [model_tag] [options]", help="Start the simulated server."
    )
    serve.add_argument("model_tag", nargs="?", default=None)
    serve.add_argument("--model", default=None)
    for names, kind, default in _VALUE_FLAGS:
        serve.add_argument(*names, type=kind, default=default)
    serve.add_argument("--served-model-name", nargs="+", default=None)
    serve.add_argument("--api-key", nargs="+", default=None)
    for name in _BOOL_FLAGS:
        serve.add_argument(name, action=argparse.BooleanOptionalAction, default=False)
    for name in _STORE_TRUE_FLAGS:
        serve.add_argument(name, action="store_true")
    return parser


def normalize(argv: list[str]) -> list[str]:
    """Underscores to dashes in flag names; fold `--speculative-config.k v` into JSON."""
    out: list[str] = []
    nested: dict[str, Any] = {}
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if not arg.startswith("--"):
            out.append(arg)
            continue
        key, equals, value = arg.partition("=")
        head, dot, rest = key.partition(".")
        head = head.replace("_", "-")
        if dot and head == "--speculative-config":
            if not equals:
                value = argv[index] if index < len(argv) else ""
                index += 1
            try:
                nested[rest] = json.loads(value)
            except json.JSONDecodeError:
                nested[rest] = value
            continue
        out.append(head + (dot + rest if dot else "") + (equals + value if equals else ""))
    if nested:
        out += ["--speculative-config", json.dumps(nested)]
    return out


def parse_cli(argv: list[str]) -> argparse.Namespace:
    """Parse like `vllm`; argparse exits with status 2 on any error."""
    args = build_parser().parse_args(normalize(argv))
    if getattr(args, "subcommand", None) == "serve" and args.model_tag is None:
        args.model_tag = args.model or DEFAULT_MODEL
    return args

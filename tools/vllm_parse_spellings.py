"""Run vLLM's own CLI parser on every case of tests/data/engine-arg-spellings.yaml.

Why: `specdecode.api.engine_args` re-implements how vLLM reads `vllm serve` arguments
without importing vLLM (the operator cannot install it). This tool records what the real
parser does with each spelling, appended to the argv the operator renders, so a unit test
(tests/unit/api/test_engine_args.py) can compare the two without vLLM. Run it with a
vLLM virtualenv's Python, from the repository root:

    /root/.cache/specdecode/vllm-0.32.0/bin/python tools/vllm_parse_spellings.py

It writes tests/data/engine-arg-spellings.vllm-<version>.json: per case, the argparse
destinations whose value differs from the operator's argv alone, or the parser's error;
and the `serve` parser's actions (option strings, destination, nargs). The operator's
engine flag table is generated from those actions: run `.venv/bin/python
tools/engine_flag_table.py` after recording (tests/unit/api/test_engine_flag_table.py
fails until the table holds every recorded destination).
The parser is built as `vllm serve` builds it (vllm/entrypoints/cli/main.py: a top-level
FlexibleArgumentParser with a `serve` subparser from `make_arg_parser`), without starting
anything.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "tests/data/engine-arg-spellings.yaml"
# The argv engine_pod.engine_args renders for a plain-decoding engine (model first).
OPERATOR_ARGV = [
    "serve",
    "org/model",
    "--host",
    "0.0.0.0",
    "--port",
    "8000",
    "--served-model-name",
    "org/model",
    "--tensor-parallel-size",
    "1",
    "--dtype",
    "auto",
    "--gpu-memory-utilization",
    "0.9",
]
CONFIG_FILE = "speculative-config:\n  method: ngram\n  num_speculative_tokens: 3\n"


def _stub_llguidance() -> None:
    """llguidance is absent from the CPU lane's virtualenv and the parser never uses it;
    a placeholder module lets vLLM's structured-output modules import."""
    stub = types.ModuleType("llguidance")

    def placeholder(name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {})

    stub.__getattr__ = placeholder  # type: ignore[method-assign]
    for name in ("llguidance", "llguidance.hf", "llguidance.torch"):
        sys.modules.setdefault(name, stub)


def _parsers() -> tuple[Any, Any]:
    """The top-level parser (which rewrites the argv) and its `serve` subparser."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser  # type: ignore
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore

    parser = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    serve = subparsers.add_parser("serve", usage="vllm serve [model_tag] [options]")
    return parser, make_arg_parser(serve)


def _parse(parser: Any, argv: list[str]) -> dict[str, Any] | str:
    """The namespace as a dict, or the parser's error."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            return dict(vars(parser.parse_args(argv)))
    except SystemExit:
        return stderr.getvalue().strip().splitlines()[-1]
    except Exception as error:  # vLLM raises ValueError/AssertionError for some inputs
        return f"{type(error).__name__}: {error}"


def main() -> None:
    _stub_llguidance()
    import vllm  # type: ignore

    table = yaml.safe_load(TABLE.read_text())
    parser, serve = _parsers()
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        Path(workdir, "engine.yaml").write_text(CONFIG_FILE)
        os.chdir(workdir)
        base = _parse(parser, OPERATOR_ARGV)
        assert isinstance(base, dict), base
        for case in table["cases"]:
            parsed = _parse(parser, OPERATOR_ARGV + case["args"])
            if isinstance(parsed, str):
                results.append({"args": case["args"], "error": parsed, "changed": []})
                continue
            changed = sorted(key for key in parsed if parsed[key] != base.get(key))
            results.append({"args": case["args"], "error": None, "changed": changed})
    out = REPO / f"tests/data/engine-arg-spellings.vllm-{vllm.__version__}.json"
    record = {
        "vllm": vllm.__version__,
        "python": sys.version.split()[0],
        "allow_abbrev": serve.allow_abbrev,
        "operator_argv": OPERATOR_ARGV,
        "actions": [
            {"options": action.option_strings, "dest": action.dest, "nargs": action.nargs}
            for action in serve._actions
        ],
        "cases": results,
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}: {len(results)} cases")


if __name__ == "__main__":
    main()

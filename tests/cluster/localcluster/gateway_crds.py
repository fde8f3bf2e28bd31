"""The Gateway API CRDs (standard channel), fetched once from the Go module proxy and applied
by every `up`.

Why: the operator's Mirror traffic source writes `HTTPRoute` RequestMirror filters, and only
the real CRDs (with their OpenAPI schema and CEL rules) show whether the API server accepts
what it writes. No Gateway implementation can be installed here (localcluster.gateway is the
data plane), but the CRDs come straight from the ``sigs.k8s.io/gateway-api`` module: `go mod
download` verifies it against the checksum database, and the YAML files are copied to
``$SPECDECODE_CACHE/gateway-api/<version>-standard`` (default ``~/.cache/specdecode``) under
a lock, like build-binaries.sh caches binaries. Etcd starts empty on each `up`, so the CRDs
are applied (server-side, by the built kubectl) each time, while the last components start.
Only the four kinds a route needs are applied: the API server spends about 1 s of CPU to
install all six standard CRDs (half of it on HTTPRoute's CEL rules), and GRPCRoute and
BackendTLSPolicy would add a third of that to every `up` for nothing the operator uses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from localcluster.binaries import BuildFailed
from localcluster.controlplane import https_get
from localcluster.locking import file_lock
from localcluster.paths import ClusterPaths
from localcluster.process import ComponentFailed, marker_env, wait_until_ready

MODULE = "sigs.k8s.io/gateway-api"
VERSION = "v1.4.0"
CHANNEL = "standard"
COMPONENT = "gateway-api-crds"
GROUP = "gateway.networking.k8s.io"
APPLIED_KINDS = ("gatewayclasses", "gateways", "httproutes", "referencegrants")


class CrdFetchFailed(BuildFailed):
    """`go mod download` of the Gateway API module failed (a BuildFailed, so callers that
    report a failed binary build report this the same way)."""


def cache_dir() -> Path:
    """Where this version's CRD files live once fetched."""
    root = Path(os.environ.get("SPECDECODE_CACHE", Path.home() / ".cache" / "specdecode"))
    return root / "gateway-api" / f"{VERSION}-{CHANNEL}"


def crd_files(directory: Path) -> list[Path]:
    """The applied kinds' files (controller-gen names them ``<group>_<plural>.yaml``)."""
    return [directory / f"{GROUP}_{plural}.yaml" for plural in APPLIED_KINDS]


def crd_names() -> list[str]:
    """The applied CRDs' names, ``<plural>.<group>``."""
    return [f"{plural}.{GROUP}" for plural in APPLIED_KINDS]


def _download_module() -> Path:
    """`go mod download` the pinned module (a no-op when in GOMODCACHE); its directory."""
    go = shutil.which("go")
    if go is None:
        raise CrdFetchFailed(f"no `go` on PATH to fetch {MODULE}@{VERSION}")
    env = {**os.environ, "GOWORK": "off", "GO111MODULE": "on"}
    with tempfile.TemporaryDirectory() as outside_any_module:
        result = subprocess.run(
            [go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
            cwd=outside_any_module, env=env, capture_output=True, text=True, check=False,
            timeout=600,
        )  # fmt: skip
    try:
        info = json.loads(result.stdout)
    except json.JSONDecodeError:
        info = {}
    if result.returncode != 0 or "Dir" not in info:
        detail = info.get("Error") or result.stderr.strip() or result.stdout.strip()
        raise CrdFetchFailed(f"go mod download {MODULE}@{VERSION} failed: {detail}")
    return Path(info["Dir"])


def ensure_crds() -> Path:
    """The cached directory of this version's standard-channel CRD files (fetched if absent)."""
    target = cache_dir()
    if all(file.exists() for file in crd_files(target)):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / ".fetch.lock"):
        if all(file.exists() for file in crd_files(target)):  # fetched while we waited
            return target
        source = _download_module() / "config" / "crd" / CHANNEL
        files = sorted(source.glob("*.yaml"))
        if not files:
            raise CrdFetchFailed(f"{source} holds no CRD files")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        for file in files:  # GOMODCACHE files are read-only: copy the bytes, not the mode
            shutil.copyfile(file, partial / file.name)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        if missing := [file.name for file in crd_files(target) if not file.exists()]:
            raise CrdFetchFailed(f"{MODULE}@{VERSION} lacks {', '.join(missing)}")
    return target


def start_apply(paths: ClusterPaths, bin_dir: Path, directory: Path) -> subprocess.Popen[bytes]:
    """Start a server-side apply of the CRD files; its output goes to the component log."""
    files = [f"--filename={file}" for file in crd_files(directory)]
    argv = [str(bin_dir / "kubectl"), "--kubeconfig", str(paths.admin_kubeconfig),
            "apply", "--server-side", "--force-conflicts", *files]  # fmt: skip
    with paths.log_file(COMPONENT).open("ab") as log:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=marker_env(paths),
        )  # fmt: skip


def established(paths: ClusterPaths, apiserver_url: str, names: list[str]) -> bool:
    """Every named CRD has condition Established=True (the API server serves it)."""
    for name in names:
        url = f"{apiserver_url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        code, body = https_get(url, paths)
        if code != 200:
            return False
        conditions = json.loads(body).get("status", {}).get("conditions", [])
        if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return False
    return True


def finish_apply(
    paths: ClusterPaths,
    child: subprocess.Popen[bytes],
    apiserver_url: str,
    names: list[str],
    timeout: float,
) -> None:
    """Wait for the apply to succeed and every CRD to be Established; ComponentFailed if not."""
    log = paths.log_file(COMPONENT)
    try:
        code = child.wait(timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        raise ComponentFailed(COMPONENT, f"kubectl apply still running after {timeout:.0f}s",
                              log) from None  # fmt: skip
    if code != 0:
        raise ComponentFailed(COMPONENT, f"kubectl apply exited with code {code}", log)
    wait_until_ready(COMPONENT, None, lambda: established(paths, apiserver_url, names),
                     timeout, log)  # fmt: skip

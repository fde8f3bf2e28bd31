"""A small Given/When/Then vocabulary over SpecDecodeRollouts, for e2e tests and the demo.

Everything goes through real interfaces: manifests through the built kubectl (as a user
or a GitOps tool would apply them), reads through the API server. Waits are conditions with
deadlines whose failure message shows the rollout's status and events.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from localcluster.handle import LocalCluster
from localcluster.manifests import merged
from localcluster.waiting import WaitTimeout, wait_for

GROUP, VERSION, PLURAL = "specdecode.io", "v1alpha1", "specdecoderollouts"


@dataclass
class Rollout:
    """One SpecDecodeRollout in one namespace."""

    cluster: LocalCluster
    namespace: str
    name: str

    def apply(self, manifest: Mapping[str, Any], check: bool = True) -> str:
        """`kubectl apply -f -` the manifest (name and namespace forced); stderr if rejected."""
        body = merged(manifest, {"metadata": {"name": self.name, "namespace": self.namespace}})
        result = self.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(body))
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl apply failed: {result.stderr.strip()}")
        return result.stderr.strip() if result.returncode != 0 else ""

    def get(self) -> dict[str, Any]:
        """The resource as the API server has it now."""
        out = self.cluster.kubectl("get", "sdr", self.name, "-n", self.namespace, "-o", "json")
        if out.returncode != 0:
            raise AssertionError(f"kubectl get sdr {self.name}: {out.stderr.strip()}")
        document: dict[str, Any] = json.loads(out.stdout)
        return document

    def status(self) -> dict[str, Any]:
        """Its status (empty before the operator wrote one)."""
        status: dict[str, Any] = self.get().get("status") or {}
        return status

    def annotate(self, action: str) -> None:
        """Ask the operator to act: promote, abort or retry."""
        self.cluster.kubectl(
            "annotate",
            "sdr",
            self.name,
            "-n",
            self.namespace,
            f"specdecode.io/action={action}",
            "--overwrite",
            check=True,
        )

    def wait_phase(self, phases: str | Iterable[str], timeout: float = 120.0) -> dict[str, Any]:
        """Wait until the phase is one of `phases`; fail with status and events if not."""
        wanted = {phases} if isinstance(phases, str) else set(phases)

        def reached() -> dict[str, Any] | None:
            status = self.status()
            return status if status.get("phase") in wanted else None

        try:
            return wait_for(reached, timeout=timeout, interval=0.5, message=f"phase {wanted}")
        except WaitTimeout as error:
            raise WaitTimeout(f"{error}\n{self.describe()}") from None

    def wait(self, predicate: Any, timeout: float = 120.0, message: str = "condition") -> Any:
        """Wait for `predicate(status)` to be truthy; fail with status and events if not."""
        try:
            return wait_for(
                lambda: predicate(self.status()), timeout=timeout, interval=0.5, message=message
            )
        except WaitTimeout as error:
            raise WaitTimeout(f"{error}\n{self.describe()}") from None

    def events(self) -> list[dict[str, Any]]:
        """Kubernetes Events about this rollout, oldest first."""
        out = self.cluster.kubectl(
            "get",
            "events",
            "-n",
            self.namespace,
            "-o",
            "json",
            "--field-selector",
            f"involvedObject.name={self.name},involvedObject.kind=SpecDecodeRollout",
        )
        items: list[dict[str, Any]] = json.loads(out.stdout).get("items", []) if out.stdout else []
        return sorted(items, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")

    def event_reasons(self) -> list[str]:
        """The reasons of its Events, oldest first."""
        return [e.get("reason", "") for e in self.events()]

    def deployments(self) -> dict[str, dict[str, Any]]:
        """Child Deployments by role."""
        out = self.cluster.kubectl(
            "get",
            "deployments",
            "-n",
            self.namespace,
            "-o",
            "json",
            "-l",
            f"specdecode.io/rollout={self.name}",
        )
        items = json.loads(out.stdout).get("items", []) if out.stdout else []
        return {d["metadata"]["labels"]["specdecode.io/role"]: d for d in items}

    def pods(self, role: str | None = None, terminating: bool = False) -> list[dict[str, Any]]:
        """Pods of one role (None: every role), running ones only unless `terminating` (a
        terminating pod's processes still run)."""
        selector = f"specdecode.io/rollout={self.name}"
        if role is not None:
            selector += f",specdecode.io/role={role}"
        out = self.cluster.kubectl("get", "pods", "-n", self.namespace, "-ojson", "-l", selector)
        items = json.loads(out.stdout).get("items", []) if out.stdout else []
        return [p for p in items if terminating or not p["metadata"].get("deletionTimestamp")]

    def describe(self) -> str:
        """Status and events, for failure messages."""
        try:
            status = json.dumps(self.status(), indent=1)[:4000]
        except AssertionError as error:
            status = str(error)
        events = "\n".join(
            f"  {e.get('type')} {e.get('reason')}: {e.get('message')}" for e in self.events()
        )
        return f"status of {self.namespace}/{self.name}:\n{status}\nevents:\n{events}"


def engine_cmdline(cluster: LocalCluster, pod: Mapping[str, Any]) -> list[str]:
    """The argv of the engine process the node agent runs for `pod` (from /proc)."""
    meta = pod["metadata"]
    state_file = cluster.agent_dir / "pods" / meta["namespace"] / meta["name"] / "state.json"
    state = json.loads(state_file.read_text())
    pid = next(c["pid"] for c in state["containers"].values() if c.get("pid"))
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return [part.decode() for part in raw.split(b"\0") if part]


def speculative_arg(argv: list[str]) -> dict[str, Any] | None:
    """The parsed --speculative-config of an engine command line, None if absent."""
    for index, part in enumerate(argv):
        if part == "--speculative-config":
            parsed: dict[str, Any] = json.loads(argv[index + 1])
            return parsed
        if part.startswith("--speculative-config="):
            parsed = json.loads(part.split("=", 1)[1])
            return parsed
    return None


def run_plugin(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubectl specdecode ...`: kubectl finds kubectl-specdecode on PATH (the venv's bin)."""
    env = cluster.env()
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    return subprocess.run(
        [str(cluster.bin_dir / "kubectl"), "specdecode", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

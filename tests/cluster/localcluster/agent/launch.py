"""Turn a container spec into a running process: env, volumes, image table, credentials.

The process starts inside the pod network (see netns.py); a pod that gets API credentials
(the operator image) also gets the API server and Prometheus as it can reach them there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .env import PodRuntime, resolve_env
from .expansion import expand_all
from .images import LaunchRequest, Toolbox, plan_launch
from .kubeapi import PodCredentials
from .netns import PodNetwork
from .objects import ObjectSource
from .process import POD_UID_ENV, ContainerProcess, spawn
from .volumes import VolumeBuilder, mount_rewriter

PASSED_THROUGH = ("SPECDECODE_LOCALCLUSTER",)
PROMETHEUS_URL_ENV = "SPECDECODE_PROMETHEUS_URL"


@dataclass(frozen=True)
class LaunchServices:
    """What starting a container needs from the agent."""

    toolbox: Toolbox
    source: ObjectSource
    credentials: PodCredentials | None
    network: PodNetwork


def base_environment(pod: dict[str, Any], pod_dir: Path, toolbox: Toolbox) -> dict[str, str]:
    """What an image would provide: PATH, HOME, HOSTNAME, plus the harness's markers."""
    env = {
        "PATH": f"{toolbox.bin_dir}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(pod_dir),
        "HOSTNAME": str(pod["metadata"]["name"]),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        POD_UID_ENV: str(pod["metadata"]["uid"]),
    }
    for name in PASSED_THROUGH:
        if name in os.environ:
            env[name] = os.environ[name]
    return env


class PodLauncher:
    """Starts the containers of one pod; called by its runners (in the pod's thread)."""

    def __init__(self, services: LaunchServices, pod_dir: Path, pod_ip: str) -> None:
        self._services = services
        self._pod_dir = pod_dir
        self._pod_ip = pod_ip
        self._volumes = VolumeBuilder(pod_dir, services.source, services.credentials)
        self.pod: dict[str, Any] = {}

    def launch(self, container: dict[str, Any]) -> ContainerProcess:
        """Resolve everything for `container` and spawn it; raises the runner's error types."""
        pod = self.pod
        runtime = PodRuntime(pod_ip=self._pod_ip)
        spec_env = resolve_env(pod, container, self._services.source, runtime)
        paths = self._volumes.build(pod, runtime)
        rewrite = mount_rewriter(container, paths)
        spec_env = {name: rewrite(value) for name, value in spec_env.items()}
        command = [rewrite(x) for x in expand_all(list(container.get("command") or []), spec_env)]
        args = [rewrite(x) for x in expand_all(list(container.get("args") or []), spec_env)]
        plan = plan_launch(
            LaunchRequest(
                image=str(container.get("image", "")),
                command=command,
                args=args,
                pod_ip=self._pod_ip,
                pod_name=str(pod["metadata"]["name"]),
            ),
            self._services.toolbox,
        )
        env = {**base_environment(pod, self._pod_dir, self._services.toolbox), **spec_env}
        env.update(plan.env)
        credentials = self._services.credentials
        automount = pod.get("spec", {}).get("automountServiceAccountToken", True)
        if plan.needs_api_credentials and automount is not False and credentials is not None:
            kubeconfig = credentials.write_kubeconfig(pod, self._pod_dir / "credentials")
            env["KUBECONFIG"] = str(kubeconfig)
            env.update(credentials.service_env())
        prometheus_url = self._services.network.endpoints.prometheus_url
        if plan.needs_api_credentials and prometheus_url:
            env[PROMETHEUS_URL_ENV] = prometheus_url  # the harness' Prometheus, via the relay
        name = str(container["name"])
        argv = self._services.network.wrap(plan.argv)
        return spawn(argv, env, self._pod_dir, self._pod_dir / f"{name}.log")

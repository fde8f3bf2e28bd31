"""The agent: wires services together, recovers from an earlier run, and dispatches pods
from the per-node informers to pod workers (one thread per pod, keyed by pod UID)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from .backoff import BackoffPolicy
from .config import AgentPaths, NodeConfig
from .images import Toolbox
from .informer import NodePodInformer, list_node_pods
from .ipalloc import PodIPAllocator
from .kubeapi import ApiObjectSource, KubeRest, PodCredentials
from .kubeletapi import KubeletServer
from .launch import LaunchServices
from .netns import PodNetwork
from .nodes import NodeKeeper
from .podworker import PodWorker, Restored, WorkerServices
from .promsd import TargetFile
from .state import kill_recorded_processes, previous_states

WORKER_JOIN_SECONDS = 20.0
log = logging.getLogger(__name__)


class Agent:
    """Plays kubelet for a set of nodes until `stop` is set."""

    def __init__(
        self,
        api: KubeRest,
        nodes: list[NodeConfig],
        paths: AgentPaths,
        backoff: BackoffPolicy,
        ips: PodIPAllocator,
        network: PodNetwork,
    ) -> None:
        self._api = api
        self._nodes = nodes
        self._node_names = {node.name for node in nodes}
        self.stop = threading.Event()
        self._services = WorkerServices(
            api=api,
            paths=paths,
            ips=ips,
            targets=TargetFile(paths.sd_file),
            launch=LaunchServices(
                toolbox=Toolbox.from_interpreter(),
                source=ApiObjectSource(api),
                credentials=PodCredentials(api, network.endpoints.apiserver_url),
                network=network,
            ),
            backoff=backoff,
        )
        self._workers: dict[str, PodWorker] = {}
        self._finished: set[str] = set()
        self._restored: dict[str, Restored] = {}
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Register nodes, clean up after an earlier run, then start heartbeats and watches."""
        kubelet = KubeletServer(self._services.paths.state_dir)
        kubelet.start()
        keeper = NodeKeeper(self._api, self._nodes, self.stop, kubelet.port)
        keeper.register()
        threading.Thread(target=keeper.run, name="heartbeat", daemon=True).start()
        self._recover()
        for node in self._nodes:
            NodePodInformer(self._api, node.name, self, self.stop).start()
        log.info("node agent running for %s", ", ".join(sorted(self._node_names)))

    def _recover(self) -> None:
        """Kill every process an earlier run left behind; remember IPs of pods still here,
        and drop the pod network addresses of pods that are gone."""
        states = previous_states(self._services.paths.state_dir)
        network = self._services.launch.network
        if not states:
            network.reset(set())
            return
        live: set[str] = set()
        for node in self._nodes:
            pods, _ = list_node_pods(self._api, node.name)
            live.update(str(pod["metadata"]["uid"]) for pod in pods)
        for uid, state in states.items():
            kill_recorded_processes(state)
            if uid in live and state.get("pod_ip"):
                self._restored[uid] = Restored(pod_ip=str(state["pod_ip"]))
        network.reset({restored.pod_ip for restored in self._restored.values()})

    def shutdown(self) -> None:
        """Stop all pods' processes (process groups) and wait for the workers."""
        self.stop.set()
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            worker.shutdown()
        for worker in workers:
            worker.join(WORKER_JOIN_SECONDS)
            if worker.is_alive():
                log.error("worker %s did not finish in time", worker.name)

    # -- PodSink -------------------------------------------------------------------------
    def replace_node_pods(self, node: str, pods: list[dict[str, Any]]) -> None:
        """After a list: start/update workers, and drop those whose pod has vanished."""
        present = {str(pod["metadata"]["uid"]) for pod in pods}
        with self._lock:
            stale = [w for uid, w in self._workers.items() if w.node == node and uid not in present]
        for worker in stale:
            worker.vanish()
        for pod in pods:
            self.upsert(pod)

    def upsert(self, pod: dict[str, Any]) -> None:
        """Start a worker for a new pod, or hand the new version to its worker."""
        uid = str(pod["metadata"]["uid"])
        if pod.get("spec", {}).get("nodeName") not in self._node_names or self.stop.is_set():
            return
        with self._lock:
            if uid in self._finished:
                return
            worker = self._workers.get(uid)
            if worker is None:
                worker = PodWorker(pod, self._services, self._forget, self._restored.pop(uid, None))
                self._workers[uid] = worker
                worker.start()
                return
        worker.update(pod)

    def remove(self, pod: dict[str, Any]) -> None:
        """The pod object is gone: its worker kills the processes."""
        with self._lock:
            worker = self._workers.get(str(pod["metadata"]["uid"]))
        if worker is not None:
            worker.vanish()

    def _forget(self, uid: str) -> None:
        with self._lock:
            self._workers.pop(uid, None)
            if not self.stop.is_set():
                self._finished.add(uid)

"""Stop everything the harness started, and report what is running.

Why several sources of pids: pid files cover the components; the agent's per-pod
``state.json`` files cover engine processes it started in their own sessions; and the
``SPECDECODE_LOCALCLUSTER`` marker in the environment catches whatever is left after a
crashed or interrupted run (a killed agent's children, a lost pid file). The agent goes
first so it cannot restart pods while we stop them. Last, the pod network namespace and its
veth pair are deleted (their names follow from the state directory, so this works without
state.json too).
"""

from __future__ import annotations

import json
from pathlib import Path

from localcluster import podnetwork
from localcluster.locking import cluster_lock
from localcluster.paths import ClusterPaths
from localcluster.process import (
    carries_marker,
    find_marked_processes,
    is_alive,
    read_pid,
    stop_processes,
)
from localcluster.state import COMPONENTS, OPTIONAL_COMPONENTS, ClusterState, forget

STOP_GRACE_SECONDS = 10.0


def pod_pids(agent_dir: Path) -> list[int]:
    """Pids the agent recorded for pod processes (``pods/<ns>/<pod>/state.json``)."""
    pids: list[int] = []
    for state_file in agent_dir.glob("pods/*/*/state.json"):
        try:
            containers = json.loads(state_file.read_text()).get("containers", {})
        except (OSError, json.JSONDecodeError, AttributeError):
            continue
        for container in containers.values() if isinstance(containers, dict) else []:
            pid = container.get("pid") if isinstance(container, dict) else None
            if isinstance(pid, int) and pid > 0:
                pids.append(pid)
    return pids


def component_pids(paths: ClusterPaths) -> dict[str, int]:
    """Pids from pid files, falling back to state.json for components without one."""
    pids: dict[str, int] = {}
    state = ClusterState.load(paths)
    for component in COMPONENTS:
        pid = read_pid(paths, component) or (state.pids.get(component) if state else None)
        if pid:
            pids[component] = pid
    return pids


def down(paths: ClusterPaths, grace: float = STOP_GRACE_SECONDS) -> list[int]:
    """Stop every process of this cluster; returns the pids that had to be signalled."""
    with cluster_lock(paths):
        return down_locked(paths, grace)


def down_locked(paths: ClusterPaths, grace: float = STOP_GRACE_SECONDS) -> list[int]:
    """`down` for a caller that already holds the cluster lock (`up` cleaning up)."""
    stopped: list[int] = []
    components = component_pids(paths)

    def ours(pids: list[int]) -> list[int]:
        return [pid for pid in pids if carries_marker(pid, paths.state_dir)]

    if "agent" in components:
        stopped += stop_processes(ours([components.pop("agent")]), grace)
    stopped += stop_processes(ours(pod_pids(paths.agent_dir)), grace)
    # Reverse start order: consumers before the API server, etcd last.
    for component in reversed(COMPONENTS):
        if component in components:
            stopped += stop_processes(ours([components[component]]), grace)
    stopped += stop_processes(find_marked_processes(paths.state_dir), grace)
    leftovers = [pid for pid in find_marked_processes(paths.state_dir) if is_alive(pid)]
    if leftovers:
        raise RuntimeError(f"processes survived SIGKILL: {leftovers}")
    podnetwork.remove(podnetwork.PodNetworkPlan.for_state_dir(paths.state_dir))
    forget(paths)
    return stopped


def status(paths: ClusterPaths) -> dict[str, int | None]:
    """Each component's pid if it is alive, else None (optional ones only if recorded)."""
    pids = component_pids(paths)
    return {
        component: pid if (pid := pids.get(component)) and is_alive(pid) else None
        for component in COMPONENTS
        if component not in OPTIONAL_COMPONENTS or component in pids
    }


def is_up(paths: ClusterPaths) -> bool:
    """True if state.json exists and every component it recorded is alive."""
    state = ClusterState.load(paths)
    return bool(state and state.pids and all(is_alive(pid) for pid in state.pids.values()))

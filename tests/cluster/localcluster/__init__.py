"""A real, small Kubernetes control plane on 127.0.0.1 for tests and the demo.

Why a package of our own: this machine has no Docker, so kind and k3d are out. The harness
runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from Go modules
(see ``tests/cluster/build-binaries.sh``), a node agent that plays kubelet for fake GPU nodes
(``localcluster.agent``) and Debian's Prometheus, all as child processes under ``.cluster/``.
Entry points: ``python -m localcluster up|down|status|env`` and the pytest fixtures in
``tests/e2e/conftest.py``. Nothing is imported here, so the agent subpackage starts light.
"""

from __future__ import annotations

"""Command lines and health probes of etcd, kube-apiserver, controller-manager and scheduler.

Why these flags: the cluster must behave like a production one where it matters to the
operator: TLS on every hop (etcd included), Node+RBAC authorization, the default admission
plugins plus NodeRestriction, service-account issuer and signing keys, an audit log at
Metadata level, and controllers acting as their own ServiceAccounts. Only what needs a
cloud or a real kubelet is left out.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from localcluster.paths import ClusterPaths

SERVICE_CIDR = "10.96.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
"""


@dataclass(frozen=True)
class ControlPlanePorts:
    """The loopback ports picked for this run (see ports.pick_free_ports)."""

    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int

    @property
    def apiserver_url(self) -> str:
        return f"https://127.0.0.1:{self.apiserver}"

    @property
    def etcd_url(self) -> str:
        return f"https://127.0.0.1:{self.etcd_client}"


def etcd_argv(bin_dir: Path, paths: ClusterPaths, ports: ControlPlanePorts) -> list[str]:
    """A single-member etcd with TLS for clients and peers; fsync off (a test cluster)."""
    pki = paths.pki_dir
    peer = f"https://127.0.0.1:{ports.etcd_peer}"
    return [
        str(bin_dir / "etcd"),
        "--name=local",
        f"--data-dir={paths.etcd_data_dir}",
        f"--listen-client-urls={ports.etcd_url}",
        f"--advertise-client-urls={ports.etcd_url}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=local={peer}",
        "--initial-cluster-state=new",
        f"--cert-file={pki / 'etcd.crt'}",
        f"--key-file={pki / 'etcd.key'}",
        f"--trusted-ca-file={pki / 'ca.crt'}",
        "--client-cert-auth",
        f"--peer-cert-file={pki / 'etcd.crt'}",
        f"--peer-key-file={pki / 'etcd.key'}",
        f"--peer-trusted-ca-file={pki / 'ca.crt'}",
        "--peer-client-cert-auth",
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def apiserver_argv(bin_dir: Path, paths: ClusterPaths, ports: ControlPlanePorts) -> list[str]:
    """kube-apiserver as a real cluster runs it, on 127.0.0.1 only."""
    pki = paths.pki_dir
    paths.audit_policy.write_text(AUDIT_POLICY)
    return [
        str(bin_dir / "kube-apiserver"),
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        # The `kubernetes` Service's Endpoints may not hold a loopback address; nothing in
        # this cluster routes through the Service anyway, so the reconciler stays off.
        "--endpoint-reconciler-type=none",
        f"--secure-port={ports.apiserver}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--etcd-servers={ports.etcd_url}",
        f"--etcd-cafile={pki / 'ca.crt'}",
        f"--etcd-certfile={pki / 'apiserver-etcd-client.crt'}",
        f"--etcd-keyfile={pki / 'apiserver-etcd-client.key'}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--service-account-issuer={SA_ISSUER}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--audit-policy-file={paths.audit_policy}",
        f"--audit-log-path={paths.audit_log}",
        "--audit-log-maxsize=200",
        "--audit-log-maxbackup=1",
        f"--requestheader-client-ca-file={pki / 'ca.crt'}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
    ]


def _component_common(paths: ClusterPaths, identity: str, port: int) -> list[str]:
    kubeconfig = paths.kubeconfig_dir / f"{identity}.kubeconfig"
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={paths.state_dir / identity}",
        "--leader-elect=false",
        "--profiling=false",
        "--v=1",
    ]


def controller_manager_argv(
    bin_dir: Path, paths: ClusterPaths, ports: ControlPlanePorts
) -> list[str]:
    """All default controllers (Deployments, EndpointSlices, GC, namespaces, SA tokens...)."""
    pki = paths.pki_dir
    return [
        str(bin_dir / "kube-controller-manager"),
        *_component_common(paths, "controller-manager", ports.controller_manager),
        "--controllers=*,-node-ipam-controller",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        "--use-service-account-credentials=true",
        # One client per controller starts at once; the default 20 qps makes that take seconds.
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}",
        f"--cluster-signing-key-file={pki / 'ca.key'}",
    ]


def scheduler_argv(bin_dir: Path, paths: ClusterPaths, ports: ControlPlanePorts) -> list[str]:
    """The default scheduler: filters on resources, selectors, taints and tolerations."""
    return [
        str(bin_dir / "kube-scheduler"),
        *_component_common(paths, "scheduler", ports.scheduler),
    ]


def _tls_context(paths: ClusterPaths, trust_cluster_ca: bool) -> ssl.SSLContext:
    if not trust_cluster_ca:
        # The controller-manager and scheduler serve self-signed certs made in --cert-dir.
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        return insecure
    context = ssl.create_default_context(cafile=str(paths.pki_dir / "ca.crt"))
    context.load_cert_chain(paths.pki_dir / "admin.crt", paths.pki_dir / "admin.key")
    return context


def https_get(url: str, paths: ClusterPaths, trust_cluster_ca: bool = True) -> tuple[int, str]:
    """GET ``url`` as admin over TLS; (status, body). Raises on connection errors."""
    context = _tls_context(paths, trust_cluster_ca)
    try:
        with urllib.request.urlopen(url, timeout=3, context=context) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode(errors="replace")


def etcd_healthy(paths: ClusterPaths, ports: ControlPlanePorts) -> bool:
    """etcd answers /health over mutual TLS (the apiserver's client cert is trusted)."""
    context = ssl.create_default_context(cafile=str(paths.pki_dir / "ca.crt"))
    context.load_cert_chain(
        paths.pki_dir / "apiserver-etcd-client.crt", paths.pki_dir / "apiserver-etcd-client.key"
    )
    with urllib.request.urlopen(f"{ports.etcd_url}/health", timeout=3, context=context) as reply:
        return bool(json.loads(reply.read()).get("health") == "true")


def apiserver_ready(paths: ClusterPaths, ports: ControlPlanePorts) -> bool:
    """/readyz is 200 once etcd is reachable and bootstrap (RBAC roles...) has finished."""
    return https_get(f"{ports.apiserver_url}/readyz", paths)[0] == 200


def component_healthy(paths: ClusterPaths, port: int) -> bool:
    """The controller-manager's or scheduler's /healthz on its secure port."""
    url = f"https://127.0.0.1:{port}/healthz"
    return https_get(url, paths, trust_cluster_ca=False)[0] == 200


def default_service_account_exists(paths: ClusterPaths, ports: ControlPlanePorts) -> bool:
    """The ServiceAccount controller has created default/default (pods are refused before)."""
    url = f"{ports.apiserver_url}/api/v1/namespaces/default/serviceaccounts/default"
    return https_get(url, paths)[0] == 200

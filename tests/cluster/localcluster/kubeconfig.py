"""Kubeconfigs for the cluster's users: admin, the control-plane components, ServiceAccounts.

Why a ServiceAccount helper: a test must be able to run the operator with exactly the RBAC
its chart grants, so it asks the API server for a token through TokenRequest (as a pod's
projected token would be made) and gets a kubeconfig that authenticates as that account.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from localcluster.paths import ClusterPaths

CLUSTER_NAME = "specdecode-local"
TOKEN_SECONDS = 24 * 3600


def _document(server: str, ca_file: Path, user: str, credentials: dict[str, str]) -> str:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER_NAME,
                "cluster": {"server": server, "certificate-authority": str(ca_file)},
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": user, "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": user,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write_cert_kubeconfig(paths: ClusterPaths, server: str, identity: str) -> Path:
    """A kubeconfig that authenticates with the client certificate ``pki/<identity>.crt``."""
    target = paths.kubeconfig_dir / f"{identity}.kubeconfig"
    credentials = {
        "client-certificate": str(paths.pki_dir / f"{identity}.crt"),
        "client-key": str(paths.pki_dir / f"{identity}.key"),
    }
    target.write_text(_document(server, paths.pki_dir / "ca.crt", identity, credentials))
    target.chmod(0o600)
    return target


def kubeconfig_for_service_account(
    paths: ClusterPaths, server: str, namespace: str, name: str
) -> Path:
    """Mint a token for ServiceAccount ``namespace/name`` via TokenRequest; write a kubeconfig.

    The ServiceAccount must exist. The token is bound to no object and lasts a day, which
    outlives any test; the file lands in ``.cluster/kubeconfigs/sa-<ns>-<name>.kubeconfig``.
    """
    from kubernetes import client, config

    api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(paths.admin_kubeconfig)
    )
    with api_client:
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=TOKEN_SECONDS)
        )
        response = client.CoreV1Api(api_client).create_namespaced_service_account_token(
            name, namespace, request
        )
    if response.status is None or not response.status.token:
        raise RuntimeError(f"TokenRequest for {namespace}/{name} returned no token")
    token = str(response.status.token)
    user = f"system:serviceaccount:{namespace}:{name}"
    target = paths.kubeconfig_dir / f"sa-{namespace}-{name}.kubeconfig"
    target.write_text(_document(server, paths.pki_dir / "ca.crt", user, {"token": token}))
    target.chmod(0o600)
    return target

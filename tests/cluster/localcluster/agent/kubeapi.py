"""A thin, dict-in dict-out layer over the official client's REST transport.

The agent speaks plain JSON (it mirrors what kubelet sends), so it uses the `kubernetes`
package for kubeconfig loading, TLS and auth, and builds requests itself. Also here: the
API-backed ConfigMap/Secret source and the TokenRequest-based credentials for pods.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlparse

from kubernetes import client, config

from .objects import config_map_payload, secret_payload

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class KubeRest:
    """JSON requests and watch streams against the API server of a kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        configuration = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), client_configuration=configuration
        )
        configuration.connection_pool_maxsize = 64
        self._api = client.ApiClient(configuration)
        self.server = str(configuration.host)
        ca_path = configuration.ssl_ca_cert
        self.ca_data = Path(ca_path).read_bytes() if ca_path else b""

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None,
        body: Any,
        content_type: str | None,
        timeout: float | tuple[float, float],
    ) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        method, url, headers, body, _ = self._api.param_serialize(
            method=method,
            resource_path=path,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        return self._api.rest_client.request(  # type: ignore[no-untyped-call]
            method, url, headers=headers, body=body, _request_timeout=timeout
        )

    def call(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        """One request; the decoded JSON answer, or ApiError."""
        response = self._send(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout
        )
        data = response.read()
        text = data.decode() if isinstance(data, bytes) else str(data or "")
        if not 200 <= response.status < 300:
            raise ApiError(response.status, text)
        return json.loads(text) if text else {}

    def watch(self, path: str, query: dict[str, Any], timeout: float) -> Iterator[dict[str, Any]]:
        """Stream watch events (dicts with `type` and `object`) until the server ends it."""
        query = {**query, "watch": "true"}
        response = self._send(
            "GET", path, query=query, body=None, content_type=None, timeout=(10.0, timeout)
        )
        raw = response.response
        try:
            if not 200 <= response.status < 300:
                raise ApiError(response.status, raw.read().decode(errors="replace"))
            buffer = b""
            for chunk in raw.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            raw.release_conn()


class ApiObjectSource:
    """ObjectSource backed by the API server (admin credentials, read at container start)."""

    def __init__(self, api: KubeRest) -> None:
        self._api = api

    def _get(self, path: str) -> dict[str, Any] | None:
        try:
            return self._api.call("GET", path)
        except ApiError as error:
            if error.status == 404:
                return None
            raise

    def config_map(self, namespace: str, name: str) -> dict[str, bytes] | None:
        obj = self._get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        return None if obj is None else config_map_payload(obj)

    def secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        obj = self._get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        return None if obj is None else secret_payload(obj)

    def claim_host_path(self, namespace: str, claim: str) -> str | None:
        pvc = self._get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}")
        volume_name = ((pvc or {}).get("spec") or {}).get("volumeName")
        pv = self._get(f"/api/v1/persistentvolumes/{volume_name}") if volume_name else None
        spec = (pv or {}).get("spec") or {}
        path = (spec.get("hostPath") or spec.get("local") or {}).get("path")
        return str(path) if path else None


class PodCredentials:
    """Mints pod-bound ServiceAccount tokens and writes kubeconfigs carrying them."""

    EXTENDED_EXPIRATION = 3607  # kubelet's value; the API server may extend it to a year

    def __init__(self, api: KubeRest, server_for_pods: str | None = None) -> None:
        """``server_for_pods``: the API server URL as pods reach it (default: the agent's)."""
        self._api = api
        self.server = server_for_pods or api.server

    def mint(self, pod: dict[str, Any], audience: str | None, expiration: int) -> str:
        """TokenRequest for the pod's ServiceAccount, bound to the pod object."""
        meta = pod["metadata"]
        account = pod.get("spec", {}).get("serviceAccountName") or "default"
        spec: dict[str, Any] = {
            "expirationSeconds": expiration,
            "boundObjectRef": {
                "kind": "Pod",
                "apiVersion": "v1",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        }
        if audience:
            spec["audiences"] = [audience]
        answer = self._api.call(
            "POST",
            f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        return str(answer["status"]["token"])

    def write_kubeconfig(self, pod: dict[str, Any], folder: Path) -> Path:
        """A kubeconfig for the pod's ServiceAccount; returns its path (mode 0600)."""
        token = self.mint(pod, None, self.EXTENDED_EXPIRATION)
        namespace = pod["metadata"]["namespace"]
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": base64.b64encode(self._api.ca_data).decode(),
                    },
                }
            ],
            "users": [{"name": "pod", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "pod",
                    "context": {
                        "cluster": "local",
                        "user": "pod",
                        "namespace": namespace,
                    },
                }
            ],
            "current-context": "pod",
        }
        path = folder / "kubeconfig"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(json.dumps(document, indent=2))
        return path

    def service_env(self) -> dict[str, str]:
        """KUBERNETES_SERVICE_HOST/PORT pointing at the API server as pods reach it."""
        url = urlparse(self.server)
        return {
            "KUBERNETES_SERVICE_HOST": url.hostname or "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(url.port or 443),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(url.port or 443),
        }

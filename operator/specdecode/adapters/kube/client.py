"""Kubernetes API access: one client set per operator, built at start-up, kept in kopf's memo.

The official client is synchronous; callers run it in a worker thread (`asyncio.to_thread`)
so the operator's event loop never blocks on the API server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config
from kubernetes.dynamic import DynamicClient

RequestHook = Callable[[str], None]
# Requests in flight at once: the worker threads `asyncio.to_thread` may use (`cli`
# sizes the event loop's default executor to it) and the connections kept open for them.
# The defaults (cores + 4 threads, 5 connections per core) queued a burst of new rollouts
# behind each other's requests, and every connection over the pool was a new TLS handshake.
KUBE_CONCURRENCY = 32


class CountingApiClient(client.ApiClient):
    """An ApiClient that reports each request's HTTP verb (the operator's request counter).

    Why here: every typed and dynamic call goes through `call_api`, so one hook counts
    them all, and on-call can see at a glance whether an idle operator talks to the API.
    """

    def __init__(self, configuration: client.Configuration, on_request: RequestHook) -> None:
        super().__init__(configuration)
        self._on_request = on_request

    def call_api(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self._on_request(method.upper())
        return super().call_api(method, *args, **kwargs)


@dataclass(frozen=True)
class KubeClients:
    """The typed and dynamic clients, sharing one connection pool."""

    api: client.ApiClient
    core: client.CoreV1Api
    apps: client.AppsV1Api
    custom: client.CustomObjectsApi
    discovery: client.DiscoveryV1Api
    dynamic: DynamicClient

    @classmethod
    def connect(
        cls, kubeconfig: str | None = None, on_request: RequestHook | None = None
    ) -> KubeClients:
        """In-cluster config when running in a pod, else the kubeconfig (KUBECONFIG).

        `on_request` is called with the HTTP verb of every request sent.
        """
        try:
            config.load_incluster_config()
            configuration = client.Configuration.get_default_copy()
        except config.ConfigException:
            configuration = client.Configuration()
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        configuration.connection_pool_maxsize = KUBE_CONCURRENCY
        api = (
            client.ApiClient(configuration)
            if on_request is None
            else CountingApiClient(configuration, on_request)
        )
        return cls(
            api=api,
            core=client.CoreV1Api(api),
            apps=client.AppsV1Api(api),
            custom=client.CustomObjectsApi(api),
            discovery=client.DiscoveryV1Api(api),
            dynamic=DynamicClient(api),
        )

    def server_side_apply(self, obj: dict[str, Any], field_manager: str) -> None:
        """Apply one object with server-side apply, owning only the fields it sets.

        `force_conflicts` takes over fields another manager (kubectl edit, a drifted
        hand edit) changed: the operator is the owner of its children, so drift is repaired.
        """
        resource = self.dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        metadata = obj["metadata"]
        resource.server_side_apply(
            body=obj,
            name=metadata["name"],
            namespace=metadata.get("namespace"),
            field_manager=field_manager,
            force_conflicts=True,
        )

"""Kubernetes API access: one client set per operator, built at start-up, kept in kopf's memo.

The official client is synchronous; callers run it in a worker thread (`asyncio.to_thread`)
so the operator's event loop never blocks on the API server. Every request has a deadline
(`Deadlines`: connect and read; the client's own default is to wait forever), so a hung API
server fails a request instead of holding a thread. A `Fence` closed by leadership
(`handlers.leadership`) refuses every later request: a leader that could not renew its
Lease sends nothing more, even from a reconcile already under way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from kubernetes import client, config
from kubernetes.client import ApiException
from kubernetes.dynamic import DynamicClient
from urllib3.util import Retry

RequestHook = Callable[[str], None]
# Requests in flight at once: the worker threads `asyncio.to_thread` may use (`cli`
# sizes the event loop's default executor to it) and the connections kept open for them.
# The defaults (cores + 4 threads, 5 connections per core) queued a burst of new rollouts
# behind each other's requests, and every connection over the pool was a new TLS handshake.
KUBE_CONCURRENCY = 32
# Attempts to connect per request (one, plus one retry): how long a request may live after
# the fence let it out is counted from this (settings.OperatorSettings.fencing_problem).
CONNECT_ATTEMPTS = 2


class Fenced(RuntimeError):
    """A request refused before it was sent: this replica no longer leads."""


class Fence:
    """Closed once, never reopened: after it closes no request leaves the process."""

    def __init__(self) -> None:
        self._closed = threading.Event()

    def close(self) -> None:
        """Refuse every request from now on (leadership lost or not renewed in time)."""
        self._closed.set()

    @property
    def closed(self) -> bool:
        """Whether requests are refused."""
        return self._closed.is_set()

    async def refuse_http(self, request: Any) -> None:
        """An httpx request hook: the operator's other requests (load pods, engines' GET
        /version) are refused too once closed: a fenced leader steers no load pod."""
        if self.closed:
            raise Fenced(f"{request.method} {request.url}: this replica no longer leads")


@dataclass(frozen=True)
class Deadlines:
    """Seconds a request may take to connect, and to wait for each read of its answer;
    `server`: the API server's own deadline (its `timeout` query parameter), after which
    it abandons the request, a write included: a client that stops waiting cannot recall a
    request it sent, so only the server's deadline bounds when a write may still land."""

    connect: float = 5.0
    read: float = 30.0
    server: float | None = None


class GuardedApiClient(client.ApiClient):
    """An ApiClient whose every request has a deadline, passes the fence, and is counted.

    Why here: every typed and dynamic call goes through `call_api`, so one place gives them
    all a `_request_timeout` (unless the call names its own), refuses them once fenced,
    and reports each one's HTTP verb (the operator's request counter: on-call sees at a
    glance whether an idle operator talks to the API).
    """

    def __init__(
        self,
        configuration: client.Configuration,
        deadlines: Deadlines,
        fence: Fence,
        on_request: RequestHook | None = None,
    ) -> None:
        super().__init__(configuration)
        self._timeout = (deadlines.connect, deadlines.read)
        # As given, not rounded up: the lifetime fencing checks is the one sent (the API
        # server parses Go durations, "5s" and "5.9s" alike).
        self._server_timeout = None if deadlines.server is None else f"{deadlines.server:g}s"
        self._fence = fence
        self._on_request = on_request

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Any = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        if self._fence.closed:
            raise Fenced(f"{method} {url}: this replica no longer leads")
        if self._on_request is not None:
            self._on_request(method.upper())
        if self._server_timeout is not None and _request_timeout is None:
            url = with_server_timeout(url, self._server_timeout)
        return super().call_api(
            method, url, header_params, body, post_params, _request_timeout or self._timeout
        )


T = TypeVar("T")


def read_if_present(read: Callable[[], T]) -> T | None:
    """What `read` returns, or None when the object is absent (404): the one answer the
    readers of an object that may not exist yet take as news; other errors propagate."""
    try:
        return read()
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def with_server_timeout(url: str, timeout: str) -> str:
    """`url` with the API server's `timeout` parameter, unless it is a watch (a stream,
    bounded by its own timeoutSeconds) or already names one."""
    query = urlsplit(url).query
    names = {name for name, _ in parse_qsl(query)}
    if "watch" in names or "timeout" in names:
        return url
    return f"{url}{'&' if query else '?'}timeout={timeout}"


@dataclass(frozen=True)
class KubeClients:
    """The typed and dynamic clients, sharing one connection pool."""

    api: client.ApiClient
    core: client.CoreV1Api
    apps: client.AppsV1Api
    custom: client.CustomObjectsApi
    discovery: client.DiscoveryV1Api
    dynamic: DynamicClient
    fence: Fence = field(default_factory=Fence)

    @classmethod
    def connect(
        cls,
        kubeconfig: str | None = None,
        on_request: RequestHook | None = None,
        deadlines: Deadlines | None = None,
        fence: Fence | None = None,
    ) -> KubeClients:
        """In-cluster config when running in a pod, else the kubeconfig (KUBECONFIG).

        `on_request` is called with the HTTP verb of every request sent; `deadlines` bound
        each request (default `Deadlines()`); once `fence` closes, nothing is sent.
        """
        try:
            config.load_incluster_config()
            configuration = client.Configuration.get_default_copy()
        except config.ConfigException:
            configuration = client.Configuration()
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        configuration.connection_pool_maxsize = KUBE_CONCURRENCY
        # Connection failures are retried (each bounded by the connect deadline); a read
        # that timed out is not: urllib3's default would send a hung request 4 times,
        # multiplying its deadline (and a PUT, such as a Lease renewal, is retried too).
        retries = CONNECT_ATTEMPTS - 1
        configuration.retries = Retry(total=retries, connect=retries, read=0, status=0, redirect=0)
        fence = fence or Fence()
        api = GuardedApiClient(configuration, deadlines or Deadlines(), fence, on_request)
        return cls(
            api=api,
            core=client.CoreV1Api(api),
            apps=client.AppsV1Api(api),
            custom=client.CustomObjectsApi(api),
            discovery=client.DiscoveryV1Api(api),
            dynamic=DynamicClient(api),
            fence=fence,
        )

    def server_side_apply(
        self, obj: dict[str, Any], field_manager: str, *, force: bool = True
    ) -> None:
        """Apply one object with server-side apply, owning only the fields it sets.

        `force` takes over fields another manager (kubectl edit, a drifted hand edit)
        changed. Callers force only objects the operator owns (an ownerReference to its
        rollout), so drift of its own children is repaired; a new object is applied
        without it (`owned.apply_children`).
        """
        resource = self.dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        metadata = obj["metadata"]
        resource.server_side_apply(
            body=obj,
            name=metadata["name"],
            namespace=metadata.get("namespace"),
            field_manager=field_manager,
            force_conflicts=force,
        )

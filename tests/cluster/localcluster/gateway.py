"""A minimal Gateway API data plane for ONE HTTPRoute, for e2e tests of mirrored traffic.

Why: no Gateway implementation (Envoy Gateway, Istio...) can run on this machine, yet the
operator's Mirror traffic source is only proven when a data plane honours the HTTPRoute it
writes. This one listens on 127.0.0.1, re-reads the route and its backends' EndpointSlices
every refresh interval (gateway_backends.py), sends each request to a backendRef of the
matching rule drawn by weight (httproute.py) and streams the answer back chunk by chunk, so
SSE passes unbuffered. For each RequestMirror filter of the rule it sends, with the
filter's probability, a copy to the mirror Service in the background and discards the
answer (gateway_mirrors.py: never delaying or failing the primary response, at most
``--mirror-limit`` copies in flight). ``GET /_gateway/stats`` returns the
counters as JSON (that path is reserved, never proxied). Start it from tests with
gateway_process.py, or by hand:

    python -m localcluster.gateway --kubeconfig K --namespace NS --route NAME --port P
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from localcluster.gateway_backends import ClusterReader, View
from localcluster.gateway_mirrors import Mirrors
from localcluster.httproute import BackendRef

STATS_PATH = "/_gateway/stats"
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
HOP_BY_HOP = frozenset(
    name.encode()
    for name in ("connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                 "te", "trailer", "transfer-encoding", "upgrade")
)  # fmt: skip
PRIMARY_TIMEOUT = httpx.Timeout(300.0, connect=5.0)


class Gateway:
    """The proxy: the last good View of the cluster, an HTTP client, mirrors and counters."""

    def __init__(
        self, reader: ClusterReader, refresh_interval: float, mirror_limit: int, seed: int | None
    ) -> None:
        self.reader = reader
        self.refresh_interval = refresh_interval
        self.rng = random.Random(seed)
        self.view = View()
        self.refreshes = 0
        self.refresh_error: str | None = None
        self.requests = self.not_found = self.unavailable = 0
        self.primary: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.mirrors = Mirrors(mirror_limit, self.rng)
        self._primary = httpx.AsyncClient(
            timeout=PRIMARY_TIMEOUT, trust_env=False, limits=httpx.Limits(max_connections=None)
        )

    def app(self) -> Starlette:
        routes = [
            Route(STATS_PATH, self.stats_endpoint, methods=["GET"]),
            Route("/{path:path}", self.proxy, methods=METHODS),
        ]
        return Starlette(routes=routes, lifespan=self._lifespan)

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: Starlette) -> AsyncIterator[None]:
        refresher = asyncio.create_task(self._refresh_forever())
        try:
            yield
        finally:
            refresher.cancel()
            await self.mirrors.aclose()
            await self._primary.aclose()
            await asyncio.to_thread(self.reader.close)

    async def _refresh_forever(self) -> None:
        while True:
            try:
                view = await asyncio.to_thread(self.reader.read)
            except Exception as error:  # keep routing with the last good view
                if self.refresh_error is None:
                    print(f"reading the cluster failed, routing as before: {error!r}", flush=True)
                self.refresh_error = f"{type(error).__name__}: {error}"
            else:
                if (view.resource_version, view.endpoints) != (
                    self.view.resource_version,
                    self.view.endpoints,
                ):
                    generation = view.route.generation if view.route else None
                    print(f"route generation {generation}, endpoints {dict(view.endpoints)}",
                          flush=True)  # fmt: skip
                self.view, self.refresh_error = view, None
            self.refreshes += 1
            await asyncio.sleep(self.refresh_interval)

    def _endpoint(self, backend: BackendRef) -> str | None:
        addresses = self.view.endpoints.get(backend.key, ())
        return self.rng.choice(addresses) if addresses else None

    async def proxy(self, request: Request) -> Response:
        """Route, mirror, forward, stream back."""
        self.requests += 1
        route = self.view.route
        rule = route.rule_for(request.url.path, request.method, request.headers) if route else None
        if rule is None:
            self.not_found += 1
            return PlainTextResponse("no HTTPRoute rule matches\n", status_code=404)
        body = await request.body()
        query = request.scope.get("query_string", b"")
        target = request.scope.get("raw_path", request.url.path.encode()).decode("latin-1")
        target += "?" + query.decode("latin-1") if query else ""
        headers = [(k, v) for k, v in request.headers.raw if k not in HOP_BY_HOP]
        headers = [(k, v) for k, v in headers if k != b"content-length"]  # httpx sets it
        for mirror in rule.mirrors:
            self.mirrors.start(mirror, self._endpoint, request.method, target, headers, body)
        backend = rule.pick_backend(self.rng)
        address = self._endpoint(backend) if backend is not None else None
        if backend is None or address is None:
            self.unavailable += 1
            return PlainTextResponse("no ready endpoint for the rule\n", status_code=503)
        counts = self.primary[backend.key]
        counts["requests"] += 1
        outgoing = self._primary.build_request(
            request.method, f"http://{address}{target}", headers=headers, content=body
        )
        try:
            upstream = await self._primary.send(outgoing, stream=True)
        except httpx.HTTPError as error:
            counts["errors"] += 1
            return PlainTextResponse(f"upstream {address}: {error!r}\n", status_code=502)
        counts[f"{upstream.status_code // 100}xx"] += 1
        response = StreamingResponse(self._relay(upstream, counts), upstream.status_code)
        response.raw_headers = [(k, v) for k, v in upstream.headers.raw if k not in HOP_BY_HOP]
        return response

    @staticmethod
    async def _relay(upstream: httpx.Response, counts: Counter[str]) -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield chunk
        except httpx.HTTPError:
            counts["broken"] += 1  # re-raised: the client must see a cut, not a clean end
            raise
        finally:
            await upstream.aclose()

    async def stats_endpoint(self, _: Request) -> Response:
        return JSONResponse(self.snapshot())

    def snapshot(self) -> dict[str, Any]:
        """What /_gateway/stats returns."""
        route = self.view.route
        return {
            "route": None if route is None else {
                "namespace": route.namespace, "name": route.name,
                "generation": route.generation, "resourceVersion": self.view.resource_version,
            },
            "refreshes": self.refreshes,
            "refresh_error": self.refresh_error,
            "endpoints": {key: list(addresses) for key, addresses in self.view.endpoints.items()},
            "requests": self.requests,
            "not_found": self.not_found,
            "unavailable": self.unavailable,
            "primary": {key: dict(counts) for key, counts in self.primary.items()},
            "mirrors": {key: dict(counts) for key, counts in self.mirrors.counts.items()},
            "mirrors_in_flight": self.mirrors.in_flight,
        }  # fmt: skip


def main(arguments: list[str] | None = None) -> int:
    """Parse options and serve until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m localcluster.gateway", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", required=True, help="the HTTPRoute's namespace")
    parser.add_argument("--route", required=True, help="the HTTPRoute's name")
    parser.add_argument("--port", type=int, required=True, help="listen on 127.0.0.1:PORT")
    parser.add_argument("--refresh-interval", type=float, default=0.5, help="seconds")
    parser.add_argument("--mirror-limit", type=int, default=64, help="mirror copies in flight")
    parser.add_argument("--seed", type=int, help="for reproducible weights and mirror draws")
    options = parser.parse_args(arguments)
    reader = ClusterReader(options.kubeconfig, options.namespace, options.route)
    gateway = Gateway(reader, options.refresh_interval, options.mirror_limit, options.seed)
    print(f"gateway for HTTPRoute {options.namespace}/{options.route} on port {options.port}",
          flush=True)  # fmt: skip
    uvicorn.run(gateway.app(), host="127.0.0.1", port=options.port, log_level="warning",
                server_header=False, date_header=False, timeout_graceful_shutdown=2)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

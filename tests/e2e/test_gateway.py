"""Gateway API on the local cluster: the real CRDs validate routes, and mirrors copy traffic.

Why: the operator's Mirror traffic source adds HTTPRoute RequestMirror filters that copy a
route's live requests to the baseline and candidate engines. Before trusting it, this
proves the ground it stands on: `localcluster up` installs the Gateway API v1.4.0 standard
CRDs (their CEL rules reject a filter with both percent and fraction), and the test data
plane (localcluster.gateway) serves a route as a Gateway would. Three simulated engines sit
behind Services: production gets every request and streams SSE back unbuffered; mirror-a
(percent 100) gets a copy of each; mirror-b (percent 30) gets a binomial share, measured on
the engines' own ``vllm:request_success_total``. The bound on that share fails by chance
at odds of two in a million, and surely if percent were ignored (all 80 copies).
Removing mirror-a's filter stops its copies once the gateway sees the new generation, and a
mirror to a Service that does not exist leaves every primary response intact.
"""

from __future__ import annotations

import json
import math
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from localcluster.gateway_process import GatewayProcess, running_gateway
from localcluster.handle import LocalCluster
from localcluster.waiting import wait_for

pytestmark = pytest.mark.e2e

GROUP, VERSION, PLURAL = "gateway.networking.k8s.io", "v1", "httproutes"
ENGINES = ("production", "mirror-a", "mirror-b")
REQUESTS = 80  # one long streamed probe, then half streamed, half not
LATER_REQUESTS = 16
MAX_TOKENS = 24
# About 0.8 s of tokens at time scale 0.5: an unbuffered gateway delivers the first chunk at
# once, a buffering one only with the last.
PROBE_TOKENS = 150
MIRROR_B_PERCENT = 30
TAIL = 1e-6  # chance per side that a correct gateway falls outside the bound


def engine_manifest(name: str) -> str:
    """A simulated engine and its Service; port 80 maps to the named container port."""
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
        - name: vllm
          image: ghcr.io/specdecode-operator/vllm-sim:dev
          command: [vllm, serve]
          args: [meta-llama/Llama-3.1-8B-Instruct, --served-model-name, llama,
                 --max-model-len, "4096", --port, "8000", --seed, "1"]
          env: [{{name: SPECDECODE_SIM_TIME_SCALE, value: "0.5"}}]
          ports: [{{name: http, containerPort: 8000}}]
          readinessProbe: {{httpGet: {{path: /health, port: http}}, periodSeconds: 1}}
          resources: {{limits: {{nvidia.com/gpu: "1"}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec:
  selector: {{app: {name}}}
  ports: [{{name: http, port: 80, targetPort: http}}]
"""


def mirror_filter(service: str, **share: Any) -> dict[str, Any]:
    """A RequestMirror filter to ``service`` port 80 (``percent=`` or ``fraction=``)."""
    backend = {"name": service, "port": 80}
    return {"type": "RequestMirror", "requestMirror": {"backendRef": backend, **share}}


def http_route(filters: list[dict[str, Any]], name: str = "chat") -> dict[str, Any]:
    """/v1 to production with ``filters``; the parent Gateway exists nowhere (none needed)."""
    rule = {
        "matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}],
        "backendRefs": [{"name": "production", "port": 80}],
        "filters": filters,
    }
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "HTTPRoute", "metadata": {"name": name},
            "spec": {"parentRefs": [{"name": "made-up-gateway"}], "rules": [rule]}}  # fmt: skip


def binomial_bounds(n: int, p: float, tail: float) -> tuple[int, int]:
    """[lo, hi] with P(X < lo) <= tail and P(X > hi) <= tail for X ~ Binomial(n, p)."""
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    lo = next(k for k in range(n + 1) if sum(pmf[: k + 1]) > tail)
    hi = next(k for k in range(n, -1, -1) if sum(pmf[k:]) > tail)
    return lo, hi


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: str
    arrivals: list[float]  # seconds after the request when each chunk of the body arrived


def chat(
    http: httpx.Client, url: str, index: int, stream: bool, max_tokens: int = MAX_TOKENS
) -> Reply:
    body = {"model": "llama", "max_tokens": max_tokens, "ignore_eos": True, "stream": stream,
            "messages": [{"role": "user", "content": f"story number {index}, please"}]}  # fmt: skip
    arrivals: list[float] = []
    data = b""
    began = time.monotonic()
    with http.stream("POST", f"{url}/v1/chat/completions", json=body) as reply:
        for chunk in reply.iter_raw():
            arrivals.append(time.monotonic() - began)
            data += chunk
    return Reply(reply.status_code, reply.headers.get("content-type", ""), data.decode(), arrivals)


def check_unbuffered(reply: Reply) -> None:
    """Chunks arrived one by one: the first long before the last (not all at the end)."""
    first, last = reply.arrivals[0], reply.arrivals[-1]
    assert len(reply.arrivals) >= 10 and first < last / 2, (
        f"{len(reply.arrivals)} chunks, the first after {first:.3f}s, the last after "
        f"{last:.3f}s: the gateway buffered the stream"
    )


def check_streamed(reply: Reply) -> None:
    assert reply.status == 200, reply.body
    assert reply.content_type.startswith("text/event-stream"), reply.content_type
    events = [line.removeprefix("data: ") for line in reply.body.splitlines() if line]
    assert events[-1] == "[DONE]", events[-3:]
    chunks = [json.loads(event) for event in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text.strip() and chunks[-1]["choices"][0]["finish_reason"] == "length"


def check_complete(reply: Reply) -> None:
    assert reply.status == 200, reply.body
    answer = json.loads(reply.body)
    assert answer["object"] == "chat.completion"
    assert answer["usage"]["completion_tokens"] == MAX_TOKENS
    assert answer["choices"][0]["message"]["content"].strip()


def drive(gateway: GatewayProcess, count: int, streamed: bool = True) -> None:
    """``count`` chat requests, 8 at a time, alternating streamed and not (if ``streamed``)."""
    with httpx.Client(trust_env=False, timeout=60) as http, ThreadPoolExecutor(8) as pool:
        replies = list(
            pool.map(lambda i: (i, chat(http, gateway.url, i, streamed and i % 2 == 0)),
                     range(1, count + 1))
        )  # fmt: skip
    for index, reply in replies:
        (check_streamed if streamed and index % 2 == 0 else check_complete)(reply)


def successes(pod_ip: str) -> int:
    """The engine's own count of finished requests (all finish reasons)."""
    with urllib.request.urlopen(f"http://{pod_ip}:8000/metrics", timeout=5) as reply:
        lines = reply.read().decode().splitlines()
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in lines
                   if line.startswith("vllm:request_success_total{")))  # fmt: skip


def ready_pod_ips(core: Any, namespace: str) -> dict[str, str]:
    def ips() -> dict[str, str] | None:
        found = {}
        for pod in core.list_namespaced_pod(namespace).items:
            conditions = pod.status.conditions or []
            if any(c.type == "Ready" and c.status == "True" for c in conditions):
                found[pod.metadata.labels["app"]] = pod.status.pod_ip
        return found if set(found) == set(ENGINES) else None

    result: dict[str, str] = wait_for(ips, timeout=90, message=f"Ready pods of {ENGINES}")
    return result


def settled(gateway: GatewayProcess, ips: dict[str, str]) -> tuple[dict[str, Any], dict[str, int]]:
    """Gateway stats and engine counts once no mirror copy is in flight and they agree."""
    stats = gateway.wait_until(lambda s: s["mirrors_in_flight"] == 0, "mirror copies done")
    sent = {name: stats["mirrors"].get(f"{gateway.namespace}/{name}:80", {}).get("sent", 0)
            for name in ENGINES[1:]}  # fmt: skip
    primary = stats["primary"][f"{gateway.namespace}/production:80"]["requests"]
    expected = {"production": primary, **sent}

    def engine_counts() -> dict[str, int] | None:
        counts = {name: successes(ips[name]) for name in ENGINES}
        return counts if counts == expected else None

    message = f"engine success counters to reach the gateway's counts {expected}"
    return stats, wait_for(engine_counts, timeout=15, message=message)


def test_route_mirrors_copy_live_requests_by_percent(
    cluster: LocalCluster, kube_api: client.ApiClient, namespace: str
) -> None:
    for name in ENGINES:
        applied = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=engine_manifest(name))
        assert applied.returncode == 0, applied.stderr
    routes: Any = client.CustomObjectsApi(kube_api)
    filters = [mirror_filter("mirror-a", percent=100),
               mirror_filter("mirror-b", percent=MIRROR_B_PERCENT)]  # fmt: skip
    routes.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, http_route(filters))
    ips = ready_pod_ips(client.CoreV1Api(kube_api), namespace)

    with running_gateway(cluster, namespace, "chat") as gateway:
        gateway.wait_until(
            lambda s: all(s["endpoints"].get(f"{namespace}/{n}:80") for n in ENGINES),
            "the gateway to see a ready endpoint of every backend",
            timeout=60,
        )
        unmatched = httpx.get(f"{gateway.url}/health", trust_env=False)
        assert unmatched.status_code == 404  # outside the rule's /v1 prefix

        began = time.monotonic()
        with httpx.Client(trust_env=False, timeout=60) as http:
            probe = chat(http, gateway.url, 0, stream=True, max_tokens=PROBE_TOKENS)
        check_streamed(probe)
        check_unbuffered(probe)
        drive(gateway, REQUESTS - 1)
        stats, counts = settled(gateway, ips)
        print(f"{REQUESTS} requests in {time.monotonic() - began:.1f}s; engines {counts}")
        assert counts["production"] == REQUESTS
        assert counts["mirror-a"] == REQUESTS
        lo, hi = binomial_bounds(REQUESTS, MIRROR_B_PERCENT / 100, TAIL)
        assert hi < REQUESTS, "the bound must fail a gateway that ignores percent"
        assert lo <= counts["mirror-b"] <= hi, (counts["mirror-b"], (lo, hi))
        mirror_b = stats["mirrors"][f"{namespace}/mirror-b:80"]
        assert mirror_b["sent"] + mirror_b["skipped"] == REQUESTS
        for name in ENGINES[1:]:
            outcome = stats["mirrors"][f"{namespace}/{name}:80"]
            assert outcome["sent"] == outcome["succeeded"], outcome
            assert not outcome.get("dropped") and not outcome.get("failed"), outcome

        # mirror-a's filter goes; one to a Service that does not exist must not hurt anyone.
        route = routes.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "chat")
        route["spec"]["rules"][0]["filters"] = [filters[1], mirror_filter("nowhere")]
        route = routes.replace_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "chat", route
        )
        gateway.wait_for_route(route["metadata"]["generation"])
        drive(gateway, LATER_REQUESTS, streamed=False)
        later, counts_later = settled(gateway, ips)
        assert counts_later["production"] == REQUESTS + LATER_REQUESTS
        assert counts_later["mirror-a"] == REQUESTS  # no copy since the filter went
        mirror_b_later = later["mirrors"][f"{namespace}/mirror-b:80"]
        assert mirror_b_later["sent"] + mirror_b_later["skipped"] == REQUESTS + LATER_REQUESTS
        assert later["mirrors"][f"{namespace}/nowhere:80"] == {"unroutable": LATER_REQUESTS}


def test_api_server_validates_routes_with_the_gateway_api_schema(
    kube_api: client.ApiClient, namespace: str
) -> None:
    routes: Any = client.CustomObjectsApi(kube_api)
    both = http_route([mirror_filter("mirror-b", percent=30, fraction={"numerator": 3})], "both")
    with pytest.raises(ApiException) as rejected:
        routes.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, both)
    assert rejected.value.status == 422
    assert "Only one of percent or fraction may be specified" in str(rejected.value.body)

    too_many = http_route([mirror_filter("mirror-b", percent=130)], "too-many")
    with pytest.raises(ApiException) as out_of_range:
        routes.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, too_many)
    assert out_of_range.value.status == 422
    assert "percent" in str(out_of_range.value.body)

    fraction = http_route([mirror_filter("mirror-b", fraction={"numerator": 3})], "fraction")
    created = routes.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, fraction, dry_run="All"
    )
    defaulted = created["spec"]["rules"][0]["filters"][0]["requestMirror"]["fraction"]
    assert defaulted == {"numerator": 3, "denominator": 100}  # the CRD's default applied

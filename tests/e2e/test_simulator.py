"""The simulated engine as a pod: Prometheus scrapes it and alpha from PromQL is what we set.

The pod runs `vllm serve` from the simulator image (the node agent maps it to
`specdecode-sim`), with a forced constant conditional acceptance a = 0.7 and k = 3. The
counters then give alpha = (a + a^2 + a^3) / 3 = 0.511; 24 requests x 200 tokens make
roughly 1,900 drafts (about 2.5 tokens per step), a standard error near 0.01, so the test
allows 0.05.
"""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client

from localcluster.handle import LocalCluster
from localcluster.waiting import wait_for
from specdecode_sim.acceptance import expected_draft_acceptance_rate

pytestmark = pytest.mark.e2e

ACCEPTANCE = 0.7
K = 3
TOLERANCE = 0.05
SPEC = json.dumps(
    {
        "method": "eagle3",
        "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "num_speculative_tokens": K,
    }
)

ENGINE = f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: engine}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: engine}}}}
  template:
    metadata:
      labels: {{app: engine}}
      annotations: {{prometheus.io/scrape: "true", prometheus.io/port: "8000"}}
    spec:
      containers:
        - name: vllm
          image: ghcr.io/specdecode-operator/vllm-sim:dev
          command: [vllm, serve]
          args: [meta-llama/Llama-3.1-8B-Instruct, --served-model-name, llama,
                 --max-model-len, "4096", --port, "8000", --seed, "1",
                 --speculative-config, '{SPEC}']
          env:
            - {{name: SPECDECODE_SIM_TIME_SCALE, value: "0.05"}}
            - {{name: SPECDECODE_SIM_ACCEPTANCE, value: "{ACCEPTANCE}"}}
          ports: [{{containerPort: 8000}}]
          readinessProbe: {{httpGet: {{path: /health, port: 8000}}, periodSeconds: 1}}
          resources: {{limits: {{nvidia.com/gpu: "1"}}}}
"""


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
        return answer


def _scalar(cluster: LocalCluster, promql: str) -> float | None:
    series = cluster.prometheus_query(promql)
    return float(series[0]["value"][1]) if series else None


def test_alpha_from_promql_matches_configured_acceptance(
    cluster: LocalCluster, kube_api: client.ApiClient, namespace: str
) -> None:
    applied = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=ENGINE)
    assert applied.returncode == 0, applied.stderr
    core = client.CoreV1Api(kube_api)

    def ready_pod() -> Any:
        pods = core.list_namespaced_pod(namespace, label_selector="app=engine").items
        ready = [
            p for p in pods
            if p.status
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        ]  # fmt: skip
        return ready[0] if ready else None

    pod = wait_for(ready_pod, timeout=60, message="the simulated engine pod to be Ready")
    base = f"http://{pod.status.pod_ip}:8000"
    selector = f'namespace="{namespace}"'
    drafted_query = f"sum(vllm:spec_decode_num_draft_tokens_total{{{selector}}})"
    # A first sample (0) before the traffic, so increase() sees the whole run.
    wait_for(
        lambda: _scalar(cluster, drafted_query) == 0.0,
        timeout=30,
        message="Prometheus to scrape the idle engine's spec-decode counters",
    )
    body = {"model": "llama", "prompt": "tell me a story", "max_tokens": 200, "ignore_eos": True}
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: _post(f"{base}/v1/completions", body), range(24)))
    assert all(a["usage"]["completion_tokens"] == 200 for a in answers)

    drafted_now = 0.0
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("vllm:spec_decode_num_draft_tokens_total"):
                drafted_now = float(line.rsplit(" ", 1)[1])
    assert drafted_now > 1000
    wait_for(
        lambda: _scalar(cluster, drafted_query) == drafted_now,
        timeout=30,
        message="Prometheus to scrape the final counters",
    )
    alpha = _scalar(
        cluster,
        f"sum(increase(vllm:spec_decode_num_accepted_tokens_total{{{selector}}}[5m]))"
        f" / sum(increase(vllm:spec_decode_num_draft_tokens_total{{{selector}}}[5m]))",
    )
    expected = expected_draft_acceptance_rate((ACCEPTANCE,) * K)
    assert alpha is not None and abs(alpha - expected) <= TOLERANCE, (alpha, expected)
    per_position = [
        _scalar(
            cluster,
            f'sum(vllm:spec_decode_num_accepted_tokens_per_pos_total{{{selector},position="{i}"}})'
            f" / sum(vllm:spec_decode_num_drafts_total{{{selector}}})",
        )
        for i in range(K)
    ]
    print(f"PromQL alpha={alpha:.4f} (expected {expected:.4f}), per position={per_position}")
    for position, rate in enumerate(per_position):
        assert rate is not None and abs(rate - ACCEPTANCE ** (position + 1)) <= TOLERANCE

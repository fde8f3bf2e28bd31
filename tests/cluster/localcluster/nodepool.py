"""The fake node pool: which Nodes the agent registers, with GPUs, product labels and taints.

This file is the contract with the node agent (``.cluster/nodes.json``): the agent creates
one Node per entry with ``nvidia.com/gpu`` capacity ``gpus``, the given labels and taints,
and heartbeats it. The pool mixes products (H100, H200, L40S) so tests can place pods by
selector, and taints only the H200 node (GPU-operator style) so tolerations visibly matter.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@dataclass(frozen=True)
class NodeSpec:
    """One fake node as the agent expects it in nodes.json."""

    name: str
    gpus: int
    product: str | None
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)


def _gpu_node(name: str, gpus: int, product: str, tainted: bool = False) -> NodeSpec:
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(gpus),
    }
    return NodeSpec(name, gpus, product, labels, [dict(GPU_TAINT)] if tainted else [])


def default_pool() -> list[NodeSpec]:
    """Two 8-GPU H100 nodes, a tainted 8-GPU H200 node, a 4-GPU L40S node, one CPU node."""
    return [
        _gpu_node("gpu-h100-0", 8, "NVIDIA-H100-80GB-HBM3"),
        _gpu_node("gpu-h100-1", 8, "NVIDIA-H100-80GB-HBM3"),
        _gpu_node("gpu-h200-0", 8, "NVIDIA-H200", tainted=True),
        _gpu_node("gpu-l40s-0", 4, "NVIDIA-L40S"),
        NodeSpec("cpu-0", 0, None, {"specdecode.dev/pool": "cpu"}),
    ]


def write_pool(path: Path, nodes: list[NodeSpec]) -> None:
    """Write ``{"nodes": [...]}`` atomically, so the agent never reads half a file."""
    document = {"nodes": [asdict(node) for node in nodes]}
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(document, indent=2) + "\n")
    partial.replace(path)


def max_gpus_per_node(nodes: list[NodeSpec]) -> int:
    """The largest GPU count of any node: a pod asking more must stay Pending."""
    return max(node.gpus for node in nodes)

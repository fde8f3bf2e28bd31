"""The agent's inputs: node definitions (nodes.json) and paths, parsed and validated."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class NodeConfig:
    """One fake node: name, GPU count and product, labels and taints."""

    name: str
    gpus: int = 0
    product: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> NodeConfig:
        """Parse one entry; a node without a name is an error."""
        if not raw.get("name"):
            raise ValueError(f"node entry without a name: {raw!r}")
        gpus = int(raw.get("gpus", 0))
        labels = {str(k): str(v) for k, v in (raw.get("labels") or {}).items()}
        if gpus and raw.get("product"):
            labels.setdefault("nvidia.com/gpu.product", str(raw["product"]))
        return cls(
            name=str(raw["name"]),
            gpus=gpus,
            product=str(raw.get("product") or ""),
            labels=labels,
            taints=[dict(t) for t in raw.get("taints") or []],
        )


def load_nodes(path: Path) -> list[NodeConfig]:
    """Read nodes.json (`{"nodes": [...]}`); duplicate names are an error."""
    document = json.loads(path.read_text())
    nodes = [NodeConfig.from_dict(entry) for entry in document.get("nodes", [])]
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate node names in {path}: {names}")
    if not nodes:
        raise ValueError(f"{path} defines no nodes")
    return nodes


@dataclass(frozen=True)
class AgentPaths:
    """Where the agent keeps pod folders and writes the Prometheus targets."""

    state_dir: Path
    sd_file: Path

    def pod_dir(self, namespace: str, name: str) -> Path:
        """`<state dir>/pods/<namespace>/<pod>/`: logs, volumes, state.json."""
        return self.state_dir / "pods" / namespace / name

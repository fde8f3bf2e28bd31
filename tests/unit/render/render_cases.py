"""Representative rollouts and desired children for the renderer's snapshot tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from specdecode.adapters.speculative_boundary import setting_of
from specdecode.api import SpecDecodeRollout, SpecDecodeRolloutSpec
from specdecode.api.speculative import SpeculativeConfig, SpeculativeMethod
from specdecode.domain.decision import DesiredChildren

REPO_ROOT = Path(__file__).resolve().parents[3]
SNAPSHOT_DIR = Path(__file__).parent / "snapshots"
UID = "5f0c6a0e-0000-4000-8000-000000000001"


def example_spec(relative_path: str) -> SpecDecodeRolloutSpec:
    """The spec of one of the committed examples (written in full: no workloadRef)."""
    obj = yaml.safe_load((REPO_ROOT / relative_path).read_text())
    return SpecDecodeRolloutSpec.model_validate(
        SpecDecodeRollout.model_validate(obj).spec.to_wire()
    )


@dataclass(frozen=True)
class RenderCase:
    """One rendering to pin: a rollout name, its spec and the desired children."""

    name: str
    rollout_name: str
    spec: SpecDecodeRolloutSpec
    desired: DesiredChildren

    @property
    def snapshot_path(self) -> Path:
        """Where the expected YAML lives."""
        return SNAPSHOT_DIR / f"{self.name}.yaml"


def cases() -> list[RenderCase]:
    """Steady state, analysis, live canary, promoted, and multi-GPU multi-replica."""
    full = example_spec("examples/specdecode-rollout.yaml")
    sim = example_spec("examples/simulator/specdecode-rollout.yaml")
    draft = example_spec("examples/methods/draft-model.yaml")
    draft_multi = draft.model_copy(
        update={"serving": draft.serving.model_copy(update={"replicas": 3})}
    )
    ngram = SpeculativeConfig(
        method=SpeculativeMethod.NGRAM, num_speculative_tokens=4, prompt_lookup_max=5
    )
    return [
        RenderCase("full-steady-plain", "llama-8b", full, DesiredChildren(production=None)),
        RenderCase(
            "full-analysis",
            "llama-8b",
            full,
            DesiredChildren(production=None, shadows=True, candidate=setting_of(full.speculative)),
        ),
        RenderCase(
            "full-live-canary",
            "llama-8b",
            full,
            DesiredChildren(
                production=None,
                shadows=True,
                candidate=setting_of(full.speculative),
                live_canary=True,
            ),
        ),
        RenderCase(
            "simulator-promoted",
            "llama-8b",
            sim,
            DesiredChildren(production=setting_of(sim.speculative)),
        ),
        RenderCase(
            "draft-tp4-three-replicas-analysis",
            "llama-70b-draft",
            draft_multi,
            DesiredChildren(
                production=setting_of(ngram),
                shadows=True,
                baseline=setting_of(ngram),
                candidate=setting_of(draft.speculative),
            ),
        ),
    ]

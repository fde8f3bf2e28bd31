"""What a `workloadRef` rollout observed of its source: the Deployment another tool owns.

Apart from `observations` because it carries a `SpeculativeConfig` (pydantic), which the
load pods, importers of `observations`, must not need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdecode.api.speculative import SpeculativeConfig
from specdecode.domain.observations import ChildState


@dataclass(frozen=True)
class SourceObservation:
    """The Deployment another tool owns that a `workloadRef` rollout judges as production.

    `problem` says why it cannot be judged (absent, no vLLM container, a mismatch with the
    rollout); then nothing else is set and no shadow is rendered from it.
    """

    name: str  # Deployment/<name>
    problem: str | None = None
    state: ChildState = field(default_factory=lambda: ChildState(exists=False))
    speculative: SpeculativeConfig | None = None  # what its vLLM container runs now
    template_hash: str | None = None
    dropped_labels: tuple[str, ...] = ()
    container: str = "vllm"
    args: tuple[str, ...] = ()  # the container's args as they are
    promotion_applied: bool = False  # the Patch strategy's apply holds its args

"""What a `workloadRef` rollout observed of its source: the Deployment another tool owns.

Apart from `observations` because it carries a `SpeculativeSetting` (pydantic), which the
load pods, importers of `observations`, must not need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdecode.domain.observations import ChildState
from specdecode.domain.speculative_setting import SpeculativeSetting


@dataclass(frozen=True)
class SourceObservation:
    """The Deployment another tool owns that a `workloadRef` rollout judges as production.

    `problem` says why it cannot be judged (absent, no vLLM container, a mismatch with the
    rollout); then nothing else is set and no shadow is rendered from it.
    """

    name: str  # Deployment/<name>
    problem: str | None = None
    state: ChildState = field(default_factory=lambda: ChildState(exists=False))
    speculative: SpeculativeSetting | None = None  # what its vLLM container runs now
    template_hash: str | None = None
    dropped_labels: tuple[str, ...] = ()
    container: str = "vllm"
    # The container's args without any speculative setting (any spelling): what a config's
    # `--speculative-config` is added to (`adoption.args_running`).
    base_args: tuple[str, ...] = ()
    promotion_applied: bool = False  # the Patch strategy's apply holds its args


@dataclass(frozen=True)
class SourceFacts:
    """What a source's vLLM container says of the spec's `model` and `engine`, read before
    the spec is resolved (`source_spec.completion` fills in what the user left out).

    A None value is one the container does not state (no model argument, no image).
    """

    name: str  # Deployment/<name>
    model: str | None = None  # the positional after `serve`, else --model
    served_model_name: str | None = None  # --served-model-name (None: the model's name)
    revision: str | None = None  # --revision
    max_model_len: int | None = None  # --max-model-len
    image: str | None = None
    vllm_version: str | None = None  # the release it states (env), else its image tag
    port: int = 8000  # --port, else vLLM's default

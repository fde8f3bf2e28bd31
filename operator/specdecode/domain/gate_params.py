"""A gate's parameters as the measures read them: a frozen dataclass, not the wire model.

Why not `GateSpec`: the gates and the statistics must not import the wire schema (an
import-linter contract holds them to it), so a second API version changes one conversion
(`domain.gate_boundary.gate_params`), not every measure. The fields are a subset of
GateSpec's, by name, with the defaults applied there (defined once, `api.gate_spec.GATE_KINDS`);
the boundary fills them from `dataclasses.fields`, so a field is listed here and in the
model, never copied by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode.vocabulary import GateType, ItlDefinition, SpeedupMetric


@dataclass(frozen=True)
class GateParams:
    """One gate: what it measures, its threshold (defaults applied), how sure it must be.

    `methods` are the wire names the gate is judged for (`none`: plain decoding; empty:
    every method; whether the gate is judged for a rollout is `api.certify`'s). `min_samples`
    is as set (None: the type's `default_min_samples`), since a ServerStep tail reads only a
    minimum the user set.
    """

    name: str
    type: GateType
    methods: tuple[str, ...]
    min_alpha: float
    min_draft_tokens: int
    min_accepted_length: float
    quantile: float
    tolerance: float
    itl_definition: ItlDefinition
    speedup_metric: SpeedupMetric
    min_speedup: float
    max_error_rate: float
    min_samples: int | None
    default_min_samples: int
    confidence: float
    dry_run: bool
    fail_only: bool

    @property
    def effective_min_samples(self) -> int:
        """min_samples as set, else the type's default."""
        return self.min_samples or self.default_min_samples

"""A gate's parameters as the measures read them: a frozen dataclass, not the wire model.

Why not `GateSpec`: the gates and the statistics must not import the wire schema (an
import-linter contract holds them to it), so a second API version changes one conversion
(`domain.gate_boundary.gate_params`), not every measure. The fields every gate has are
listed here; a type's own settings (`settings`) are exactly the fields of its wire
declaration (`api.gate_kinds`), defaults applied, read by name in its `domain.gates`
module: a new gate type adds no field here.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from specdecode.vocabulary import GateType

Choice = TypeVar("Choice", bound=Enum)


@dataclass(frozen=True)
class GateParams:
    """One gate: what it measures, its threshold (defaults applied), how sure it must be.

    `methods` are the wire names the gate is judged for (`none`: plain decoding; empty:
    every method; whether the gate is judged for a rollout is `api.certify`'s). `min_samples`
    is as set (None: the type's `default_min_samples`), since a ServerStep tail reads only a
    minimum the user set. `settings`: (field, value) of the type's own settings, by
    GateSpec's field names (a tuple, so the parameters stay hashable).
    """

    name: str
    type: GateType
    methods: tuple[str, ...]
    min_samples: int | None
    default_min_samples: int
    confidence: float
    dry_run: bool
    fail_only: bool
    settings: tuple[tuple[str, object], ...] = ()

    @property
    def effective_min_samples(self) -> int:
        """min_samples as set, else the type's default."""
        return self.min_samples or self.default_min_samples

    def setting(self, field: str) -> object:
        """One of the type's own settings; a KeyError names a field the type does not have."""
        return dict(self.settings)[field]

    def number(self, field: str) -> float:
        """A numeric setting (a threshold, a quantile, a tolerance)."""
        value = self.setting(field)
        assert isinstance(value, int | float), field
        return float(value)

    def count(self, field: str) -> int:
        """A whole-number setting (minDraftTokens)."""
        value = self.setting(field)
        assert isinstance(value, int), field
        return value

    def choice(self, field: str, kind: builtins.type[Choice]) -> Choice:
        """An enumerated setting (itlDefinition, speedupMetric), as its enum."""
        value = self.setting(field)
        assert isinstance(value, kind), field
        return value

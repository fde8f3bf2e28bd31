"""`spec.searchSpace` of a SpecDecodeTuning: explicit candidates and method x k grids.

A grid expands into speculative configs exactly as a rollout's `speculative` would take
them (the same model and its per-config rules); the tuning spec then checks every
expanded config against the engine's vLLM release (`tuning._search_space_problems`),
which the API server can do only for explicit candidates.
"""

from __future__ import annotations

import itertools
from typing import Annotated

from pydantic import Field, model_validator

from specdecode.api.base import KubeModel, optional
from specdecode.api.speculative import SpeculativeConfig, SpeculativeMethod
from specdecode.api.speculative_rules import MAX_SPECULATIVE_TOKENS, SCHEDULE
from specdecode.api.tuning_rules import SEARCH_SPACE_RULES

MAX_CANDIDATES = 32  # explicit configs
MAX_GRIDS = 8
MAX_EXPANDED = 64  # configs after expanding the grids: bounds trials and the report
DraftLength = Annotated[int, Field(ge=1, le=MAX_SPECULATIVE_TOKENS)]


class SearchGrid(KubeModel):
    """One method (and draft) crossed with lists of k and, for n-gram methods, lookup sizes."""

    method: SpeculativeMethod = Field(description="Drafting method, as speculative.method.")
    model: str | None = optional("Draft model or head.", min_length=1, max_length=256)
    num_speculative_tokens: list[DraftLength] = Field(
        min_length=1, max_length=MAX_SPECULATIVE_TOKENS, description="k values to try."
    )
    prompt_lookup_max: list[Annotated[int, Field(ge=1, le=64)]] = Field(
        default_factory=list,
        max_length=8,
        description="ngram, ngram_gpu: longest n-gram values to try (empty: vLLM's default).",
    )
    draft_tensor_parallel_size: int | None = optional(
        "As speculative.draft_tensor_parallel_size.", ge=1, le=16
    )

    @model_validator(mode="after")
    def _unique_values(self) -> SearchGrid:
        for name, values in (
            ("numSpeculativeTokens", self.num_speculative_tokens),
            ("promptLookupMax", self.prompt_lookup_max),
        ):
            if len(set(values)) != len(values):
                raise ValueError(f"grid {name}: duplicate values")
        return self

    def expand(self) -> list[SpeculativeConfig]:
        """Every config of the grid, validated as a rollout's speculative config would be."""
        lookups: list[int | None] = list(self.prompt_lookup_max) or [None]
        configs = []
        for k, lookup in itertools.product(self.num_speculative_tokens, lookups):
            wire: dict[str, object] = {"method": self.method.value, "num_speculative_tokens": k}
            for key, value in (
                ("model", self.model),
                ("prompt_lookup_max", lookup),
                ("draft_tensor_parallel_size", self.draft_tensor_parallel_size),
            ):
                if value is not None:
                    wire[key] = value
            configs.append(SpeculativeConfig.model_validate(wire))
        return configs


class SearchSpace(KubeModel):
    """The configs to compare: explicit candidates plus expanded grids (at least one)."""

    candidates: list[SpeculativeConfig] = Field(
        default_factory=list,
        max_length=MAX_CANDIDATES,
        description="Configs as speculative would take them (without "
        f"{SCHEDULE}: the tuning derives it).",
    )
    grids: list[SearchGrid] = Field(
        default_factory=list, max_length=MAX_GRIDS, description="Method x k grids."
    )

    @model_validator(mode="after")
    def _not_empty(self) -> SearchSpace:
        raise_problems(SEARCH_SPACE_RULES.violations(self.to_wire()))
        return self

    def expanded(self) -> list[SpeculativeConfig]:
        """Candidates, then each grid's configs, in order (duplicates are refused)."""
        return [*self.candidates, *(c for grid in self.grids for c in grid.expand())]


def raise_problems(problems: list[str]) -> None:
    """One ValueError naming every problem (pydantic reports it at the model)."""
    if problems:
        raise ValueError("; ".join(problems))

"""`status` of a SpecDecodeTuning: a bounded summary; the whole report lives in a ConfigMap.

Status stays small whatever the search space (at most MAX_BANDS winners, the schedule,
counters), so a tuning over 64 configs x 12 loads never nears the object size limit;
the per-config x load table, bounds and pictures go to the report ConfigMap it names.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from specdecode.api.base import KubeModel, optional
from specdecode.api.speculative_rules import MAX_SCHEDULE_ENTRIES
from specdecode.api.status import Condition

MAX_BANDS = 12


class TuningPhase(StrEnum):
    """Where the tuning is."""

    PENDING = "Pending"  # accepted, no trial started
    RUNNING = "Running"  # trials running or queued
    SUCCEEDED = "Succeeded"  # every load decided (or the budget spent): report written
    FAILED = "Failed"  # the spec cannot be acted on; message says why


class BandWinner(KubeModel):
    """The best config over one band of concurrencies (inclusive)."""

    min_concurrency: int = Field(ge=1, description="Lowest concurrency of the band.")
    max_concurrency: int = Field(ge=1, description="Highest concurrency of the band.")
    config: str = Field(description="Winner's fingerprint, or none (plain decoding wins).")
    speedup: str = Field(default="", description="Objective ratio with bounds, as text.")


class SpecDecodeTuningStatus(KubeModel):
    """What the operator reports; written whole by the operator."""

    phase: TuningPhase = Field(default=TuningPhase.PENDING, description="Tuning phase.")
    message: str = Field(default="", description="Why the tuning is where it is.")
    observed_generation: int | None = optional("Generation acted on.")
    configs: int = Field(default=0, ge=0, description="Configs in the search space.")
    configs_left: int = Field(default=0, ge=0, description="Configs not yet eliminated.")
    trials_run: int = Field(default=0, ge=0, description="Trial looks taken so far.")
    gpu_seconds: float = Field(default=0, ge=0, description="GPU-seconds spent so far.")
    winners: list[BandWinner] = Field(
        default_factory=list, max_length=MAX_BANDS, description="Winner per load band."
    )
    schedule: list[list[int]] = Field(
        default_factory=list,
        max_length=MAX_SCHEDULE_ENTRIES,
        description="Recommended num_speculative_tokens_per_batch_size (vLLM 0.24+).",
    )
    report_config_map: str | None = optional("ConfigMap with the report (JSON and Markdown).")
    conditions: list[Condition] = Field(default_factory=list, description="Ready, Progressing.")

"""A speculative config as the domain reads it: its own type, not the wire's.

The rules read a config's method and k (messages), its per-batch-size schedule (the
kernel's stage context, whether a stage may draft nothing, the schedule offer), its
fingerprint (labels, status, readiness) and its `--speculative-config` text (what an
adopted source is patched to run). `document` is vLLM's JSON as the wire writes it, so
the boundary (`adapters.speculative_boundary`) turns a setting back into the wire's
`SpeculativeConfig` exactly; the text and the fingerprint are computed from it by the one
function the wire uses too (`specdecode.speculative_document`).
"""

from __future__ import annotations

from typing import Any

from specdecode.domain.stage_state import StateModel
from specdecode.speculative_document import cli_json, document_fingerprint, k_zero_possible
from specdecode.vocabulary import SCHEDULE, SpeculativeMethod


class SpeculativeSetting(StateModel):
    """One speculative config: what the rules read of it, and its whole document."""

    method: SpeculativeMethod
    num_speculative_tokens: int  # k
    schedule: list[list[int]] | None = None  # [start, end, k] ranges (None: k everywhere)
    document: dict[str, Any]  # vLLM's keys, no nulls: the wire's `to_wire()`

    def to_cli_json(self) -> str:
        """The exact `--speculative-config` argument: compact, keys sorted, no nulls."""
        return cli_json(self.document)

    def fingerprint(self) -> str:
        """The short stable hash that names this config in labels and status."""
        return document_fingerprint(self.document)

    def k_zero_possible_at(self, batch: int | None) -> bool:
        """Whether the schedule may give k = 0 at `batch` (None: a requestRate stage, any
        batch size), so zero drafts there is what the config asks for."""
        return k_zero_possible(self.schedule, batch)

    def with_schedule(self, entries: list[list[int]]) -> SpeculativeSetting:
        """This config with the per-batch-size schedule `entries` in place of its own."""
        schedule = [list(entry) for entry in entries]
        document = {**self.document, SCHEDULE: schedule}
        return self.model_copy(update={"schedule": schedule, "document": document})

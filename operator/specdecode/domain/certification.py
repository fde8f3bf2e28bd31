"""The evidence kernel's answer for one gate at one stage, as the domain reads it.

Why here: whether a gate is judged and whether its pass counts is decided once, in
`api.certify`; the domain imports nothing from `api` (an import-linter contract), so the
boundary (`adapters.gate_boundary`) evaluates the kernel and hands its answer over as
this value: the same facts, no wire model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Certification:
    """Whether the gate is measured and reported (`judged`), whether its Failed verdicts
    fail the stage (`may_fail`), whether its pass counts towards the stage's pass
    (`certifies`), and why not (`reason`, from the first clause that does not hold)."""

    judged: bool
    may_fail: bool
    certifies: bool
    reason: str | None


JUDGED = Certification(True, True, True, None)  # every clause holds

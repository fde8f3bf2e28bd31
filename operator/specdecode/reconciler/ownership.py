"""Apply findings, by their old names: `Found` (what one apply collects) lives in
`adapters.kube.findings`, how a decision shows it in `domain.apply_findings`, so the
apply's steps and the decision use them without a call into another reconciler module."""

from __future__ import annotations

from specdecode.adapters.kube.findings import Found
from specdecode.domain.apply_findings import (
    NOT_OWNED,
    carry_findings,
    not_owned_found,
    with_foreign_children,
)

__all__ = ["NOT_OWNED", "Found", "carry_findings", "not_owned_found", "with_foreign_children"]

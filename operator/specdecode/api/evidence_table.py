"""The evidence table: for each gate type and traffic source, what is admitted and judged.

Why a table: admission (the CRD's CEL rules and the models' validators, `certify`'s
clauses built from it), judging (`certify`, called at every look) and the docs' gate table
(`tools/docgen.py`, `docs/gates.md`) read these rows, so what a gate reads, whether it can
certify a stage under a source, when it is skipped and the least data it decides on are
written once: in each gate type's declaration (`api.gate_kinds`), gathered here.
"""

from __future__ import annotations

from specdecode.api.gate_kinds.declaration import Evidence as Evidence  # noqa: PLC0414
from specdecode.api.gate_spec import GATE_KINDS, GateType
from specdecode.api.traffic import TrafficSourceType

EVIDENCE: dict[tuple[GateType, TrafficSourceType], Evidence] = {
    (gate_type, source): kind.evidence[source]
    for gate_type, kind in GATE_KINDS.items()
    for source in TrafficSourceType
}

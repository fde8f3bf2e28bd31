"""Each gate type's wire declaration, one module per type: its fields, defaults, evidence.

Why one module per type: what the wire knows of a gate (the `GateSpec` fields it may set,
their bounds and defaults, its minSamples default and unit, what each traffic source reads
of it) is written in one place. The modules are found from `GateType`, one per member
(`vocabulary.import_gate_modules`), each declaring its row as it is imported; `api.gate_spec`
lists each module's fields among `GateSpec`'s bases (checked: `declaration.require_listed`)
and derives `GATE_KINDS` and `EVIDENCE` from the declarations. How a gate judges is its
`domain.gates` module's. More: CONTRIBUTING.md.
"""

from __future__ import annotations

from specdecode.vocabulary import import_gate_modules

# One module per `GateType` member, `gate_kinds/<snake_case of its value>.py`.
MODULES = import_gate_modules(__name__)

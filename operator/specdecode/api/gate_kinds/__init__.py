"""Each gate type's wire declaration, one module per type: its fields, defaults, evidence.

Why one module per type: what the wire knows of a gate (the `GateSpec` fields it may set,
their bounds and defaults, its minSamples default and unit, what each traffic source reads
of it) is written in one place; `api.gate_spec` lists each module's fields among
`GateSpec`'s bases (the registry) and derives `GATE_KINDS` and `EVIDENCE` from the
declarations. How a gate judges is its `domain.gates` module's. More: CONTRIBUTING.md.
"""

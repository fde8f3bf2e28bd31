"""What certifies a stage, decided once: a gate's clauses, read by admission and by judging.

Why one module: whether a gate is judged and whether its pass counts, decided apart by
admission, the CRD and judging, drifts apart. Each condition is one clause (an expression
tree, `rules`): the CRD's CEL rules are built from them and `certify` evaluates the same
trees in Python at every look.
Clauses and their order: docs/internals.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specdecode.api import rules as r
from specdecode.api.evidence_table import EVIDENCE
from specdecode.api.gate_spec import NO_PASS_FLAGS, GateSpec, GateType
from specdecode.api.rules.expressions import truth
from specdecode.api.schedule_reach import off_through
from specdecode.api.traffic import (
    MirrorPairing,
    TrafficSourceType,
    TrafficSpec,
    server_side_mirror,
)
from specdecode.vocabulary import NO_SPECULATION, SCHEDULE


@dataclass(frozen=True)
class Where:
    """Where a rule finds the stage's context: the traffic source, the method, the schedule.

    Paths from `self` (the rollout's spec on the spec rules, the analysis on the analysis
    rules); `certify` evaluates the clauses with `SPEC` on a spec-shaped dict.
    """

    traffic: r.Ref
    speculative: r.Ref

    def reads(self, source: TrafficSourceType) -> r.Expr:
        """Whether the stage's evidence is `source`'s row: Mirror's is the engines' own
        metrics (ServerSide pairing); Mirror through the splitter is paired client-side
        evidence, read like replayed Prompts."""
        server_side = server_side_mirror(self.traffic)
        return server_side if source is TrafficSourceType.MIRROR else r.Not(server_side)

    @property
    def method(self) -> r.Ref:
        return self.speculative["method"]

    @property
    def schedule(self) -> r.Ref:
        return self.speculative[SCHEDULE]


SPEC = Where(traffic=r.at("analysis.traffic"), speculative=r.at("speculative"))


def admitted_under(gate: r.Ref, source: TrafficSourceType) -> r.Expr:
    """Clause 1 for one source: the gate is one `source` can read (`EVIDENCE`)."""
    rows = {gate_type: EVIDENCE[gate_type, source] for gate_type in GateType}
    # Judged types first, then those kept but not judged (the CRD's order since Mirror's rules).
    order = sorted(GateType, key=lambda t: not rows[t].judged)
    anywhere = [t.value for t in order if rows[t].admitted and rows[t].itl is None]
    restricted = [
        r.all_of(
            r.Binary("==", gate["type"], r.lit(t.value)),
            r.any_of(
                r.Not(r.Has(gate["itlDefinition"])),
                r.Binary("==", gate["itlDefinition"], r.lit(row.itl[0].value)),
            ),
        )
        for t, row in rows.items()
        if row.admitted and row.itl is not None
    ]
    everything = len(anywhere) == len(GateType)
    if everything:
        return r.lit(True)
    return r.any_of(r.Binary("in", gate["type"], r.lit(anywhere)), *restricted)


def judged_by(gate: r.Ref, source: TrafficSourceType) -> r.Expr:
    """Clause 3 for one source: its row judges the gate's type."""
    unjudged = [t.value for t in GateType if not EVIDENCE[t, source].judged]
    return r.Not(r.Binary("in", gate["type"], r.lit(unjudged))) if unjudged else r.lit(True)


def judged_by_source(gate: r.Ref, where: Where) -> r.Expr:
    """Clause 3 with the source read from the object."""
    return r.all_of(
        *(
            r.any_of(r.Not(where.reads(source)), judged_by(gate, source))
            for source in TrafficSourceType
            if any(not EVIDENCE[t, source].judged for t in GateType)
        )
    )


def _no_filter(gate: r.Ref) -> tuple[r.Expr, r.Expr]:
    return r.Not(r.Has(gate["methods"])), r.Binary("==", r.size(gate["methods"]), r.lit(0))


def for_every_method(gate: r.Ref) -> r.Expr:
    """No `methods` filter: judged whatever the rollout's method (clause 2 without one)."""
    return r.any_of(*_no_filter(gate))


def applies_to_method(gate: r.Ref, where: Where) -> r.Expr:
    """Clause 2: `methods` is empty or names the method (`none`: speculative unset)."""
    return r.any_of(
        *_no_filter(gate),
        r.all_of(r.Has(where.speculative), r.Binary("in", where.method, gate["methods"])),
        r.all_of(
            r.Not(r.Has(where.speculative)), r.Binary("in", r.lit(NO_SPECULATION), gate["methods"])
        ),
    )


def schedule_allows(gate: r.Ref, stage: r.Ref, where: Where) -> r.Expr:
    """Clause 4: not a Speedup gate asking a gain at a stage the schedule never speculates at."""
    asks_gain = r.any_of(
        r.Not(r.Has(gate["minSpeedup"])), r.Binary(">=", gate["minSpeedup"], r.lit(1.0))
    )
    return r.Not(
        r.all_of(
            r.Binary("==", gate["type"], r.lit(GateType.SPEEDUP.value)),
            asks_gain,
            r.Has(where.speculative),
            r.Has(where.schedule),
            r.Has(stage["concurrency"]),
            off_through(where.schedule, stage["concurrency"]),
        )
    )


def not_flagged(gate: r.Ref, flag: str) -> r.Expr:
    """Clauses 5 and 6: the flag (`dryRun`, `failOnly`) unset or false."""
    return r.any_of(r.Not(r.Has(gate[flag])), r.Binary("==", gate[flag], r.lit(False)))


def enforced(gate: r.Ref) -> r.Expr:
    """Clauses 5 and 6 together: neither dryRun nor failOnly."""
    return r.all_of(*(not_flagged(gate, flag) for flag in NO_PASS_FLAGS))


@dataclass(frozen=True)
class Certification:
    """The kernel's answer for one gate at one stage."""

    judged: bool  # measured and reported (clauses 1-4)
    may_fail: bool  # its Failed verdicts fail the stage (1-5)
    certifies: bool  # its pass counts towards the stage's pass (1-6)
    reason: str | None  # why not, from the first clause that does not hold


JUDGED = Certification(True, True, True, None)  # every clause holds


@dataclass(frozen=True)
class StageContext:
    """The stage as the kernel reads it: traffic source, concurrency, method, schedule."""

    source: TrafficSourceType  # the evidence row (`evidence_row`), not only the wire source
    method: str | None = None  # the wire name; None: plain decoding (speculative unset)
    concurrency: int | None = None  # None: a requestRate stage (or Mirror)
    schedule: Sequence[Sequence[int]] | None = None  # the candidate's, [low, high, k]

    def env(self, gate: GateSpec) -> Mapping[str, Any]:
        """The clauses' variables: the gate and stage as wire dicts, a spec-shaped `self`."""
        speculative: dict[str, Any] = {"method": self.method}
        if self.schedule is not None:
            speculative[SCHEDULE] = [list(entry) for entry in self.schedule]
        traffic: dict[str, Any] = {"source": self.source.value}
        if self.source is TrafficSourceType.MIRROR:
            traffic["mirrorPairing"] = MirrorPairing.SERVER_SIDE.value
        spec: dict[str, Any] = {"analysis": {"traffic": traffic}}
        if self.method is not None:
            spec["speculative"] = speculative
        stage = {} if self.concurrency is None else {"concurrency": self.concurrency}
        return {"self": spec, "g": gate.to_wire(), "s": stage}


def evidence_row(traffic: TrafficSpec) -> TrafficSourceType:
    """The `EVIDENCE` row a stage under `traffic` reads: Mirror's only with ServerSide
    pairing; the splitter's paired client-side evidence is judged like replayed Prompts."""
    return TrafficSourceType.MIRROR if traffic.server_side_mirror else TrafficSourceType.PROMPTS


Says = Callable[[GateSpec, StageContext], str]
_G, _S = r.Ref("g"), r.Ref("s")


def _not_method(gate: GateSpec, stage: StageContext) -> str:
    method = stage.method if stage.method is not None else "plain decoding"
    return f"not judged for {method} (judged for {', '.join(map(str, gate.methods or ()))})"


def _refused(gate: GateSpec, stage: StageContext) -> str:
    return f"not judged: {stage.source.value} traffic cannot read this {gate.type.value} gate"


def _not_source(gate: GateSpec, stage: StageContext) -> str:
    row = EVIDENCE[gate.type, stage.source]
    return f"not judged: {row.not_judged}"


def _schedule_off(gate: GateSpec, stage: StageContext) -> str:
    # A gain cannot be asked where nothing is drafted; a minSpeedup under 1 (speculation
    # off must cost at most that much) is still judged there.
    return (
        f"not judged: the candidate's num_speculative_tokens_per_batch_size turns "
        f"speculation off at every batch size up to concurrency {stage.concurrency}, where "
        f"minSpeedup {gate.number('min_speedup'):g} asks a gain (the tail and errors are still "
        f"judged)"
    )


def _admitted_here(gate: r.Ref, where: Where) -> r.Expr:
    return r.all_of(
        *(
            r.implies(where.reads(source), admitted_under(gate, source))
            for source in TrafficSourceType
        )
    )


# (clause, level it ends, reason when it does not hold); levels: 0 judged, 1 may fail, 2 pass.
CLAUSES: tuple[tuple[r.Expr, int, Says], ...] = (
    (_admitted_here(_G, SPEC), 0, _refused),
    (applies_to_method(_G, SPEC), 0, _not_method),
    (judged_by_source(_G, SPEC), 0, _not_source),
    (schedule_allows(_G, _S, SPEC), 0, _schedule_off),
    (not_flagged(_G, "dryRun"), 1, lambda g, s: "dry run: measured, never fails the stage"),
    (not_flagged(_G, "failOnly"), 2, lambda g, s: "fail only: no evidence for a pass"),
)


def certify(gate: GateSpec, stage: StageContext) -> Certification:
    """Does `gate` judge this stage, may it fail it, does its pass count, and if not, why."""
    env = stage.env(gate)
    for clause, level, says in CLAUSES:
        if not truth(clause.value(env)):
            return Certification(level > 0, level > 1, False, says(gate, stage))
    return JUDGED

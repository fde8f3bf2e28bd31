"""One Protocol every gate type implements, and the table that finds it by type.

Why a registry: a newcomer looking for how `TailLatency` is judged opens
`gates/tail_latency.py`; adding a gate type is one module that registers itself, with no
dispatch chain to extend. Each module registers at import; `gates/__init__` imports one per
`GateType` member (`vocabulary.import_gate_modules`) and `require_registered` checks each did.
Each measure also declares the observations it reads (`Need`), beside the code that reads
them: the reconciler fetches the union of what a stage's measured gates declare
(`gates.stage_needs`), so no gate starves because another gate type is absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from types import ModuleType
from typing import Protocol

from specdecode.domain.gate_measures import LOAD_CLIENT_LIMIT, Measurement, UnsentLimit
from specdecode.domain.gate_params import GateParams
from specdecode.domain.observations import StageObservations
from specdecode.vocabulary import GateType


@dataclass(frozen=True)
class Look:
    """What a measure needs to know about the look besides the data.

    `error` is the one-sided error each bound of this look may have (its share of the
    sequential budget, see `domain.sequential`); `method` is the rollout's speculative
    method (None: plain decoding); `mirror` says the traffic is mirrored (no responses);
    `may_not_draft` says the candidate's per-batch-size schedule may give k = 0 at the
    stage's load (`LookPlan.may_not_draft`: no drafts there is by design, never a finding);
    `unsent` is how much of the offered load a side may miss before the latency gates
    refuse to judge it (the splitter's shed share under Mirror traffic).
    """

    error: float
    method: str | None = None
    mirror: bool = False
    may_not_draft: bool = False
    unsent: UnsentLimit = LOAD_CLIENT_LIMIT


class Need(StrEnum):
    """One kind of observation a gate reads, as the reconciler fetches it.

    ACCEPTANCE_COUNTERS: the candidate's spec-decode counters (Prometheus).
    CLIENT_LATENCY: both sides' latency blocks from the load pods (chunk gaps, TPOT).
    ENGINE_OUTCOMES: both engines' finished requests by reason (vLLM's own counter; the
    only outcomes Mirror traffic has, so fetched only for it).
    PER_REQUEST_MOMENTS: the candidate's per-request acceptance sums (load pods).
    REQUEST_OUTCOMES: the candidate's finished and failed requests (load pods).
    SERVER_STEP_HISTOGRAMS: both engines' step-ITL histograms (vLLM's own metrics).
    """

    ACCEPTANCE_COUNTERS = "AcceptanceCounters"
    CLIENT_LATENCY = "ClientLatency"
    ENGINE_OUTCOMES = "EngineOutcomes"
    PER_REQUEST_MOMENTS = "PerRequestMoments"
    REQUEST_OUTCOMES = "RequestOutcomes"
    SERVER_STEP_HISTOGRAMS = "ServerStepHistograms"


class Headline(StrEnum):
    """Which of the rollout's headline figures a gate's results are, for the code that shows
    or guards them without naming a gate type.

    ALPHA: the `alpha` printer column, the `specdecode_alpha` gauge (value and bounds) and
    the figure the guard's acceptance half holds production to (`domain.guarding`).
    TAIL: the `itlRatio` printer column, the ITL gauge (each side's quantile) and the gate
    whose server-side figure the guard's latency half holds production to
    (`domain.latency_drift`). At most one gate type per headline (`register` refuses two).
    """

    ALPHA = "alpha"
    TAIL = "tail"


class TuningFigure(StrEnum):
    """Which of a tuning cell's figures a gate measures (`domain.tuning.measure`): a tuning
    recommends what a rollout would promote, so it measures with the same gate modules."""

    SPEEDUP = "speedup"
    TAIL = "tail"
    ERRORS = "errors"
    ALPHA = "alpha"
    ACCEPTED_LENGTH = "accepted_length"


# The needs the load pods' report answers (one read gives all three).
LOAD_REPORT_NEEDS = frozenset(
    {Need.CLIENT_LATENCY, Need.PER_REQUEST_MOMENTS, Need.REQUEST_OUTCOMES}
)


class GateMeasure(Protocol):
    """What one gate type is, on the domain side: what it reads, which way its limit points,
    how it judges. Gate classes subclass it (for the default `server_cross_check`).

    Why all of it here: the shared path (`gate_boundary`, `analyzing`, `close_call`) asks
    the registered measure instead of branching on the type, so a new gate is its module,
    its wire declaration `api.gate_kinds.<type>` (fields, defaults, evidence rows), its
    `GateType` value and its fields among GateSpec's bases (CONTRIBUTING, "Adding a gate
    type").
    """

    # The limit is a floor the estimate must reach (True) or a ceiling (False): how a close
    # call is worded (`close_call`).
    higher_is_better: bool
    # What it computes from what it reads, in the docs' gate table (`tools.gate_table`),
    # followed there by the defaults of `judged_against`, the settings it is judged on.
    statistic: str
    judged_against: tuple[str, ...]
    # Roles elsewhere in the operator, declared here so no module outside the gates branches
    # on a type: the headline figure its results are (`Headline`), whether it compares the
    # two sides' client timings (so a saturated load client makes it refuse a look: the
    # `specdecode_load_saturated` gauge), how the concurrency verdict names its figure when
    # it fails above a stage that passed (None: a lower load could not pass it), and the
    # tuning cell's figure it measures.
    headline: Headline | None = None
    compares_client_timings: bool = False
    load_phrase: str | None = None
    tuning_figure: TuningFigure | None = None

    def needs(self, gate: GateParams) -> frozenset[Need]:
        """The observations `measure` reads for this gate (its settings may matter)."""
        ...

    def measure(self, gate: GateParams, seen: StageObservations, look: Look) -> Measurement:
        """Measure the gate's statistic with bounds at `look.error` and judge them.

        Why one signature: the stage logic (counters, limits, history) is the same for every
        type, so it lives once in `gate_boundary.evaluate_gate`; a measure only measures.
        """
        ...

    def server_cross_check(
        self, gate: GateParams, seen: StageObservations
    ) -> tuple[float | None, float | None]:
        """The engines' own (baseline, candidate) figure for the gate's statistic, reported
        beside a judged look so the two instruments can be compared; None where none."""
        return None, None


_REGISTRY: dict[GateType, GateMeasure] = {}


def register(gate_type: GateType) -> Callable[[type[GateMeasure]], type[GateMeasure]]:
    """Class decorator: the decorated measure judges gates of `gate_type`."""

    def add(cls: type[GateMeasure]) -> type[GateMeasure]:
        if gate_type in _REGISTRY:
            raise ValueError(f"gate type {gate_type} registered twice")
        for role in ("headline", "tuning_figure"):
            mine = getattr(cls, role)
            if mine is not None and any(getattr(m, role) == mine for m in _REGISTRY.values()):
                raise ValueError(f"{role} {mine} claimed by two gate types")
        _REGISTRY[gate_type] = cls()
        return cls

    return add


def require_registered(modules: dict[GateType, ModuleType]) -> dict[GateType, ModuleType]:
    """`modules` (each gate type's, imported), once each has registered its type's measure;
    fails naming a module that registered none (its class lacks `@register`)."""
    if missing := [t for t in modules if t not in _REGISTRY]:
        raise LookupError(
            ", ".join(f"{modules[t].__name__} registers no measure for {t.value}" for t in missing)
            + ": decorate its GateMeasure class with @register(GateType.<member>)"
        )
    return modules


def measure_for(gate_type: GateType) -> GateMeasure:
    """The registered measure of a gate type (every GateType has one: a test checks)."""
    return _REGISTRY[gate_type]


def registered_types() -> frozenset[GateType]:
    """Gate types with a measure."""
    return frozenset(_REGISTRY)


def headline_type(headline: Headline) -> GateType:
    """The gate type whose results are `headline` (for a default gate of that role)."""
    return next(t for t, m in _REGISTRY.items() if m.headline is headline)


def tuning_type(figure: TuningFigure) -> GateType:
    """The gate type a tuning measures `figure` with."""
    return next(t for t, m in _REGISTRY.items() if m.tuning_figure is figure)


def is_headline(gate_type: GateType, headline: Headline) -> bool:
    """Whether results of `gate_type` are `headline`."""
    return measure_for(gate_type).headline is headline

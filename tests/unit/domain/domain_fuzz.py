"""Hypothesis strategies for the fail-open fuzzer (`test_fail_open_fuzz`).

Why a module of its own: the fuzzer's inputs are two things the API and the world may
hand the domain, and each is long to write. `spec_fields` draws specs as plain data and
`admitted_spec` builds them through the pydantic models (a draw the API refuses is
discarded, as the API server refuses it): every method of every supported vLLM release or
plain decoding, with and without a per-batch-size schedule, Prompts or Mirror traffic, the
default stages or generated ones (gate lists with dryRun, failOnly, methods filters and
minimums). `looks` draws what each look saw, as a descriptor the driver turns into
`StageObservations` for whatever stage is running then: nothing, a stale window, empty
series, metric errors, partial or absent load reports, saturated or behind load clients,
zero drafts, tiny or huge samples, a candidate better or worse. Evidence is drawn from pools
built once (`latency_side`, ...), so a generated case costs a few reconciles, not the
statistics' set-up.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from domain_fixtures import acceptance
from hypothesis import assume
from hypothesis import strategies as st
from pydantic import ValidationError

from specdecode.api import GateType, SpecDecodeRolloutSpec, SpeculativeConfig
from specdecode.api.analysis import ScheduleFallback, default_stages
from specdecode.api.gate_spec import ItlDefinition, SpeedupMetric
from specdecode.api.speculative import NO_SPECULATION
from specdecode.api.vllm_versions import (
    METHODS,
    NEWEST_MINOR,
    OLDEST_SUPPORTED,
    field_exists,
    methods_in,
)
from specdecode.domain.observations import (
    AcceptanceCounts,
    AcceptedMoments,
    EngineOutcomePair,
    EngineOutcomes,
    LatencyBlock,
    LatencySamples,
    MetricError,
    ServerStepHistograms,
    StageObservations,
    StepHistogram,
)
from specdecode.domain.sketch import Sketch

# One release per supported minor: the oldest patch of 0.11, then each 0.Y.0.
RELEASES = [
    ".".join(map(str, OLDEST_SUPPORTED)),
    *(f"0.{minor}.0" for minor in range(OLDEST_SUPPORTED[1] + 1, NEWEST_MINOR + 1)),
]
SCHEDULE = "num_speculative_tokens_per_batch_size"
CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)
# What production runs before the rollout when the desired config is plain decoding (a
# config every release accepts), so that speculation turned off is analysed too.
STABLE_NGRAM = SpeculativeConfig(method="ngram", num_speculative_tokens=4, prompt_lookup_max=4)


# ---------------------------------------------------------------- specs the API admits


# Strategies draw plain data (field names as in Python); `admitted` builds the models from
# it once per distinct draw (the API's validation is most of a case's cost otherwise).
Fields = dict[str, Any]


@st.composite
def speculative_configs(draw: st.DrawFn, release: str) -> Fields | None:
    """A config of any method `release` runs (None: plain decoding), schedule where it has one."""
    method = draw(st.sampled_from([NO_SPECULATION, *sorted(methods_in(release))]))
    if method == NO_SPECULATION:
        return None
    k = draw(st.integers(1, 6))
    fields: Fields = {"method": method, "num_speculative_tokens": k}
    needs_model = METHODS[method].needs_model
    if needs_model or (needs_model is None and draw(st.booleans())):
        fields["model"] = "org/draft"
    if field_exists(SCHEDULE, release) and draw(st.integers(0, 3)) > 0:
        fields[SCHEDULE] = draw(st.one_of(schedules(k), small_batches_only(k)))
    return fields


@st.composite
def schedules(draw: st.DrawFn, k: int) -> list[list[int]]:
    """[start, end, k] ranges from batch size 1, sorted and disjoint; k = 0 turns speculation
    off (drawn often: a stage where it is off is not judged on a gain)."""
    ends = sorted(draw(st.sets(st.sampled_from([1, 3, 4, 8, 16, 31, 63, 4096]), min_size=1)))
    start, entries = 1, []
    for end in ends:
        entries.append([start, end, draw(st.sampled_from([0, 0, k, max(0, k - 1)]))])
        start = end + 1
    return entries


@st.composite
def small_batches_only(draw: st.DrawFn, k: int) -> list[list[int]]:
    """Speculation at batch sizes 1..s only, off above (issue 33's hole 6: k = 0 at a
    stage's nominal concurrency, while a closed loop's smaller batches still speculate)."""
    last = draw(st.sampled_from([1, 3, 8]))
    return [[1, last, k], [last + 1, 4096, 0]]


GATE_TYPES = st.sampled_from([gate_type.value for gate_type in GateType])
FLAGS = st.sampled_from(["", "", "", "dry_run", "fail_only"])
METHOD_FILTERS: st.SearchStrategy[list[str] | None] = st.one_of(
    st.none(),
    st.just([]),
    st.lists(st.sampled_from([NO_SPECULATION, *sorted(METHODS)]), max_size=3, unique=True),
)


@st.composite
def gates(
    draw: st.DrawFn,
    name: str,
    mirror: bool,
    enforced_tail: bool = False,
    speedup: bool = False,
    enforced_error: bool = False,
) -> Fields:
    """One gate of any type (`speedup`: a Speedup gate) with some of its own fields set, flags
    and a methods filter; `enforced_tail` / `enforced_error`: a TailLatency / ErrorRate gate
    with neither (what Mirror needs in some stage)."""
    enforced_tail = enforced_tail or enforced_error
    gate_type = GateType.TAIL_LATENCY.value if enforced_tail else draw(GATE_TYPES)
    gate_type = GateType.ERROR_RATE.value if enforced_error else gate_type
    gate_type = GateType.SPEEDUP.value if speedup else gate_type
    fields: Fields = {"name": name, "type": gate_type}
    flag = "" if enforced_tail else draw(FLAGS)
    if flag:
        fields[flag] = True
    methods = None if enforced_tail else draw(METHOD_FILTERS)
    if methods is not None:
        fields["methods"] = methods
    if draw(st.booleans()):
        fields["min_samples"] = draw(st.sampled_from([1, 5, 25, 100, 5000]))
    if draw(st.booleans()):
        fields["confidence"] = draw(st.sampled_from([0.6, 0.9, 0.99]))
    fields.update(draw(_type_fields(GateType(gate_type), mirror)))
    return fields


@st.composite
def _type_fields(draw: st.DrawFn, gate_type: GateType, mirror: bool) -> Fields:
    """Thresholds of the gate's own type, each set or left to its default."""
    maybe = st.booleans()
    fields: Fields = {}
    if gate_type is GateType.ACCEPTANCE:
        if draw(maybe):
            fields["min_alpha"] = draw(st.sampled_from([0.01, 0.05, 0.2, 0.55, 0.95]))
        if draw(maybe):
            fields["min_draft_tokens"] = draw(st.sampled_from([1, 100, 1000, 10**7]))
    elif gate_type is GateType.ACCEPTED_LENGTH:
        if draw(maybe):
            fields["min_accepted_length"] = draw(st.sampled_from([1.0, 1.01, 1.3, 3.0]))
    elif gate_type is GateType.TAIL_LATENCY:
        if draw(maybe):
            fields["tolerance"] = draw(st.sampled_from([0.0, 0.1, 0.4, 3.0]))
        if draw(maybe):
            fields["quantile"] = draw(st.sampled_from([0.51, 0.9, 0.99]))
        choices = [ItlDefinition.SERVER_STEP] if mirror else list(ItlDefinition)
        if draw(maybe):
            fields["itl_definition"] = draw(st.sampled_from([c.value for c in choices]))
    elif gate_type is GateType.SPEEDUP:
        if draw(maybe):
            fields["min_speedup"] = draw(st.sampled_from([0.1, 0.5, 0.9, 1.0, 1.2]))
        if draw(maybe):
            fields["speedup_metric"] = draw(st.sampled_from([m.value for m in SpeedupMetric]))
    elif draw(maybe):
        fields["max_error_rate"] = draw(st.sampled_from([0.0, 0.02, 0.1, 0.5, 1.0]))
    return fields


@st.composite
def stages(draw: st.DrawFn, index: int, mirror: bool, enforced_tail: bool = False) -> Fields:
    """A short stage (a few looks long) with one to five generated gates (and an enforced
    TailLatency gate, `enforced_tail`)."""
    minimum = draw(st.sampled_from([1, 20, 45]))
    fields: Fields = {
        "name": f"stage-{index}",
        "warmup_seconds": draw(st.sampled_from([0, 10, 30])),
        "min_duration_seconds": minimum,
        "max_duration_seconds": minimum + draw(st.sampled_from([0, 30, 90])),
    }
    if mirror or draw(st.integers(0, 3)) > 0:
        fields["concurrency"] = draw(st.sampled_from(CONCURRENCIES))
    else:
        fields["request_rate"] = draw(st.sampled_from([0.5, 5.0]))
    # Most stages the API refuses have no gate that is neither dryRun nor failOnly: the last
    # gate is one as a rule, so that fewer draws are wasted.
    # Some stages judge only speedup: the API admits them, yet where the candidate's schedule
    # turns speculation off (k = 0) none of their gates is judged.
    speedup = not mirror and draw(st.integers(0, 3)) == 0
    count = draw(st.integers(1, 5))
    drawn = [draw(gates(f"g{i}", mirror, speedup=speedup)) for i in range(count)]
    if draw(st.integers(0, 4)) > 0:
        drawn[-1] = {k: v for k, v in drawn[-1].items() if k not in ("dry_run", "fail_only")}
    if not mirror and draw(st.integers(0, 2)) == 0:  # an enforced gain beside the others
        drawn.append({"name": "gain", "type": GateType.SPEEDUP.value})
    if enforced_tail:
        drawn.append(draw(gates("tail", mirror, enforced_tail=True)))
        # and an enforced ErrorRate gate (issue 33), mostly beside it; without one the API
        # must refuse the analysis (the fuzzer checks it does)
        if mirror and draw(st.integers(0, 5)) > 0:
            drawn.append(draw(gates("errors", mirror, enforced_error=True)))
    fields["gates"] = drawn
    return fields


DEFAULT_STAGES = "the default stages, each 10 s warm-up, 30 s to 120 s"


def short_default_stages() -> list[Fields]:
    """The default stages with their gates as they are, each clock shortened to a few looks."""
    shortened = {"warmup_seconds": 10, "min_duration_seconds": 30, "max_duration_seconds": 120}
    return [
        {**stage.model_dump(mode="json", exclude_none=True), **shortened}
        for stage in default_stages()
    ]


def admitted_spec(fields: Fields) -> SpecDecodeRolloutSpec:
    """The spec `fields` (from `spec_fields`) describe, as the API admits it; one the API
    refuses is discarded (`assume`), as the API server refuses it: not a rollout that runs.
    The test draws the fields, not the model, so a failing case prints them compactly."""
    spec = admitted(json.dumps(fields, sort_keys=True))
    assume(spec is not None)
    assert spec is not None
    return spec


@st.composite
def spec_fields(draw: st.DrawFn) -> Fields:
    """A rollout spec as plain data, before the API has judged it."""
    release = draw(st.sampled_from(RELEASES))
    mirror = draw(st.booleans())
    # Prompts: a request timeout under the stages' minimums (the API refuses one at or above
    # a stage's; the default 45 s refused every generated and shortened default stage)
    timeout = {"request_timeout_seconds": draw(st.sampled_from([10.0, 15.0]))}
    traffic: Fields = (
        {"source": "Mirror", "mirror_pairing": "ServerSide", "http_route": "chat"}
        if mirror
        else timeout
    )
    stage_list: list[Fields] | str
    if draw(st.booleans()):
        stage_list = DEFAULT_STAGES  # `admitted` puts them in (a failing case prints less)
    else:
        count = draw(st.integers(1, 3))
        # Mirror needs an enforced TailLatency gate in some stage (else refused): mostly one.
        tail_at = draw(st.integers(0, count)) if mirror else count
        stage_list = [draw(stages(i, mirror, enforced_tail=i == tail_at)) for i in range(count)]
    model: Fields = {"name": "meta-llama/Llama-3.1-8B-Instruct"}
    if draw(st.integers(0, 5)) == 0:
        model["extra_args"] = list(draw(st.sampled_from(EXTRA_ARGS)))
    fields: Fields = {
        "model": model,
        "engine": {"image": f"vllm/vllm-openai:v{release}"},
        "speculative": draw(speculative_configs(release)),
        "analysis": {
            "traffic": traffic,
            "stages": stage_list,
            "interval_seconds": draw(st.sampled_from([5, 15, 40])),
            "failure_limit": draw(st.integers(0, 2)),
            "inconclusive_limit": draw(st.integers(0, 2)),
            "consecutive_error_limit": draw(st.integers(0, 3)),
            "manual": draw(st.sampled_from([False, False, False, True])),
            "pause_before_promotion": draw(st.booleans()),
            "schedule_fallback": draw(st.sampled_from([f.value for f in ScheduleFallback])),
        },
    }
    return fields


def _recorded_spellings() -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Every spelling the recorded releases' own parsers were run on, with the destinations
    it set there (`tests/data/engine-arg-spellings.vllm-*.json`), across releases."""
    found: dict[tuple[str, ...], set[str]] = {}
    for path in sorted(DATA.glob("engine-arg-spellings.vllm-*.json")):
        for case in json.loads(path.read_text())["cases"]:
            found.setdefault(tuple(case["args"]), set()).update(case["changed"] or ())
    return sorted((args, tuple(sorted(dests))) for args, dests in found.items())


DATA = Path(__file__).resolve().parents[2] / "data"
SPELLINGS = _recorded_spellings()
# extraArgs drawn: a recorded spelling (what it sets is in `SETS`), or a free flag.
EXTRA_ARGS = [("--seed", "7"), *(args for args, _ in SPELLINGS)]
SETS = dict(SPELLINGS)


@lru_cache(maxsize=20_000)
def admitted(fields: str) -> SpecDecodeRolloutSpec | None:
    """The spec as the API server admits it and the operator parses it (validated, not
    constructed: AnalysisSpec's Mirror defaults are a validator's returned copy, which
    a model's __init__ drops), or None when it is refused."""
    data = json.loads(fields)
    if data["analysis"]["stages"] == DEFAULT_STAGES:
        data["analysis"]["stages"] = short_default_stages()
    try:
        return SpecDecodeRolloutSpec.model_validate(data)
    except ValidationError:
        return None


# ---------------------------------------------------------------- what each look saw


@dataclass(frozen=True)
class Look:
    """One reconcile: how long after the previous one, and what the stage's window held.

    `window`: "data" (the fields below), "none" (no stage observations), "stale" (a window
    of another stage) or "empty" (the current stage's, with every series absent). Each field
    names an entry of its pool (`latency_side`, `server_step`, ...); "none" is absent,
    "error" a failed metric source.
    """

    seconds: int
    repeat: int  # the same look this many times in a row, `seconds` apart
    window: str
    counts: tuple[str, float, float, int]  # (kind, alpha, drafts, requests)
    baseline: str
    candidate: str
    moments: str
    server: str
    outcomes: str = "clean"  # Mirror's engine outcome counts (`engine_outcomes`)
    edit: str = ""  # a spec edit before this look: what the engines run changes (`EDITS`)

    def observations(self, stage_name: str) -> StageObservations | None:
        """The window this look hands to `decide` while `stage_name` runs."""
        if self.window == "none":
            return None
        name = stage_name if self.window != "stale" else f"{stage_name}-before"
        if self.window == "empty":
            return StageObservations(stage_name=name)
        return StageObservations(
            stage_name=name,
            candidate_acceptance=acceptance_counts(*self.counts),
            baseline_latency=latency_side(self.baseline, "none"),
            candidate_latency=latency_side(self.candidate, self.moments),
            server_step_itl=server_step(self.server),
            engine_outcomes=engine_outcomes(self.outcomes),
        )

    @property
    def has_data(self) -> bool:
        """Whether this look carries any measurement of the running stage at all."""
        return self.window == "data" and (
            (self.counts[0] == "counts" and self.counts[2] > 0)
            or self.baseline not in EMPTY_SIDES
            or self.candidate not in EMPTY_SIDES
            or self.moments != "none"
            or self.server not in ("none", "error", "empty")
            or self.outcomes not in ("none", "error", "unscraped")
        )


# Latency pools: `fast` beats `base`, `slow` loses to it; the rest are what a window lacks.
SIDES = (
    "base",
    "fast",
    "slow",
    "thin",
    "incomplete",
    "lagging",
    "behind",
    "failing",
    "flaky",
    "empty",
    "none",
    "error",
)
EMPTY_SIDES = frozenset({"empty", "none", "error"})
MOMENTS = ("none", "one", "few", "many-high", "many-low")
SERVER = ("none", "error", "empty", "same", "better", "worse", "thin", "no-steps")
# Both engines' request outcomes (Mirror): what the counters may lack, and a failing side.
OUTCOMES = (
    "none",
    "error",
    "unscraped",
    "clean",
    "thin",
    "failing",
    "restarted",
    "short",
    "hung",
    "gauges unknown",
)
COUNT_KINDS = ("counts", "none", "error", "zero")
ALPHAS = (0.0, 0.1, 0.19, 0.21, 0.5, 0.9)
DRAFTS = (3.0, 300.0, 30_000.0, 3_000_000.0)
REQUESTS = (0, 5, 40, 4000)
# What a clean look where the candidate wins shows: a look's starting point.
GOOD = {"baseline": "base", "candidate": "fast", "moments": "many-high", "server": "better"}
BAD = {"baseline": "base", "candidate": "slow", "moments": "many-low", "server": "worse"}
SAME = {"baseline": "base", "candidate": "base", "moments": "many-high", "server": "same"}


@st.composite
def looks(draw: st.DrawFn) -> Look:
    """A look near a clean win, loss or tie, with up to three parts replaced by anything."""
    preset = dict(draw(st.sampled_from([GOOD, GOOD, SAME, BAD])))
    good_counts = preset is not BAD
    counts = ("counts", 0.9 if good_counts else 0.1, 30_000.0, 4000)
    parts = st.sampled_from(["counts", "baseline", "candidate", "moments", "server", "outcomes"])
    replacements = draw(st.lists(parts, max_size=3))
    for part in replacements:
        if part == "counts":
            counts = (
                draw(st.sampled_from(COUNT_KINDS)),
                draw(st.sampled_from(ALPHAS)),
                draw(st.sampled_from(DRAFTS)),
                draw(st.sampled_from(REQUESTS)),
            )
        else:
            pool = {
                "baseline": SIDES,
                "candidate": SIDES,
                "moments": MOMENTS,
                "server": SERVER,
                "outcomes": OUTCOMES,
            }
            preset[part] = draw(st.sampled_from(pool[part]))
    return Look(
        seconds=draw(st.sampled_from([15, 1, 5, 30, 60, 120])),
        repeat=draw(st.integers(1, 6)),
        window=draw(st.sampled_from(["data", "data", "data", "none", "stale", "empty"])),
        counts=counts,
        edit=draw(st.sampled_from(["", "", "", "", "", "", "", "", *EDITS])),
        **preset,
    )


# Edits of what the engines run, mid-analysis: each must restart the analysis.
EDITS = {
    "revision": ("model", "revision", "0123abc"),
    "image": ("engine", "image", "vllm/vllm-openai:v0.32.0"),
    "extraArgs": ("model", "extra_args", ["--seed", "11"]),
}


def edited(spec: SpecDecodeRolloutSpec, edit: str) -> SpecDecodeRolloutSpec | None:
    """`spec` with `edit` (`EDITS`) applied, as the API admits it (None: refused, or no
    change)."""
    part, field, value = EDITS[edit]
    data = spec.model_dump(mode="json", exclude_none=True)
    if data[part].get(field) == value:
        return None
    data[part][field] = value
    try:
        return SpecDecodeRolloutSpec.model_validate(data)
    except ValidationError:
        return None


@st.composite
def empty_looks(draw: st.DrawFn) -> Look:
    """A look that measured nothing: no window, another stage's, or every series empty."""
    return Look(
        seconds=draw(st.sampled_from([15, 1, 5, 30, 60, 120])),
        repeat=draw(st.integers(1, 6)),
        window=draw(st.sampled_from(["none", "stale", "empty", "data"])),
        counts=(draw(st.sampled_from(["none", "zero", "error"])), 0.9, 0.0, 0),
        baseline=draw(st.sampled_from(sorted(EMPTY_SIDES))),
        candidate=draw(st.sampled_from(sorted(EMPTY_SIDES))),
        moments="none",
        server=draw(st.sampled_from(["none", "error", "empty"])),
        outcomes=draw(st.sampled_from(["none", "error", "unscraped"])),
    )


def acceptance_counts(
    kind: str, alpha: float, drafts: float, requests: int
) -> AcceptanceCounts | MetricError | None:
    """The candidate's counters: at `alpha` over `drafts`, absent, failed or all zero."""
    if kind == "none":
        return None
    if kind == "error":
        return MetricError("prometheus", "503 Service Unavailable")
    if kind == "zero":
        return AcceptanceCounts(drafts=0.0, draft_tokens=0.0, accepted_tokens=0.0)
    return _counts(alpha, drafts, requests)


@cache
def _counts(alpha: float, drafts: float, requests: int) -> AcceptanceCounts:
    return acceptance(alpha, drafts, k=3, requests=float(requests))


BLOCKS = 40
SAMPLES_PER_BLOCK = 150


@cache
def latency_side(name: str, moments: str) -> LatencySamples | MetricError | None:
    """One side's load report from the pool (built once), with the candidate's moments."""
    if name == "none":
        return None
    if name == "error":
        return MetricError("load", "load pod report: connection refused")
    side = _side(name)
    if moments == "none":
        return side
    blocks = side.blocks or (LatencyBlock(start=0.0, seconds=2.0),)
    first = dataclasses.replace(blocks[0], accepted=_moments(moments))
    return dataclasses.replace(side, blocks=(first, *blocks[1:]))


def _side(name: str) -> LatencySamples:
    if name == "empty":
        return LatencySamples(shards=1)
    scale = {"fast": 0.8, "slow": 1.8}.get(name, 1.0)
    blocks = 4 if name == "thin" else BLOCKS
    per_block = 10 if name == "thin" else SAMPLES_PER_BLOCK
    ok, failed = {"thin": (10, 0), "failing": (100, 900), "flaky": (3000, 300)}.get(name, (3000, 0))
    rng = random.Random(f"{name}")
    made = []
    for b in range(blocks):
        itl = [scale * rng.lognormvariate(-3.5, 0.3) for _ in range(per_block)]
        tpot = [scale * 0.05 * rng.uniform(0.9, 1.1) for _ in range(per_block // 10)]
        made.append(
            LatencyBlock(
                start=2.0 * b,
                seconds=2.0,
                per_chunk_itl=Sketch.of(itl),
                per_token_itl=Sketch.of(itl),
                time_per_output_token=Sketch.of(tpot),
                client_delay=Sketch.of([0.02] * 5 if name == "lagging" else [0.0001]),
                requests_ok=ok // blocks,
                requests_failed=failed // blocks,
                arrivals_skipped=50 if name == "behind" else 0,
                chunks=per_block,
            )
        )
    incomplete = "load pod candidate-1 did not answer" if name == "incomplete" else None
    return LatencySamples(
        blocks=tuple(made), window_seconds=2.0 * blocks, shards=1, incomplete=incomplete
    )


def _moments(name: str) -> AcceptedMoments:
    """Per-request (steps, accepted) sums: one request, ten, or 400 at a high or low alpha."""
    requests = {"one": 1, "few": 10}.get(name, 400)
    per_step = 0.3 if name == "many-low" else 2.4  # accepted tokens per step, k = 3
    return AcceptedMoments.of(
        (50.0, 50.0 * per_step * (1.2 if i % 2 else 0.8)) for i in range(requests)
    )


# vLLM's step-ITL bucket edges (seconds), as `inter_token_latency_seconds` exposes them.
EDGES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, float("inf"))


def _histogram(shares: dict[float, float], total: float, steps: float | None) -> StepHistogram:
    """Cumulative counts putting each `shares` fraction of `total` at or below its edge."""
    running, counts = 0.0, []
    for edge in EDGES:
        running += shares.get(edge, 0.0) * total
        counts.append(running)
    return StepHistogram(upper_bounds=EDGES, cumulative_counts=tuple(counts), steps=steps)


_FAST = {0.025: 0.7, 0.05: 0.3}  # a bucket below the baseline's tail: ServerStep can pass
_BASE = {0.05: 0.3, 0.075: 0.69, 0.1: 0.01}
_SLOW = {0.1: 0.3, 0.15: 0.69, 0.2: 0.01}


@cache
def engine_outcomes(name: str) -> EngineOutcomePair | MetricError | None:
    """Both engines' finished requests by reason (Mirror's ErrorRate evidence) from the pool."""
    if name == "none":
        return None
    if name == "error":
        return MetricError("prometheus", "503 Service Unavailable")
    if name == "unscraped":
        return EngineOutcomePair(EngineOutcomes(), EngineOutcomes())
    served = 10.0 if name == "thin" else 4000.0
    known = {"scraped": True, "in_flight_known": True}
    clean = EngineOutcomes(by_reason={"stop": served, "error": 0.0}, **known)
    candidate = {
        "failing": EngineOutcomes(by_reason={"stop": 3600.0, "error": 400.0}, **known),
        "restarted": EngineOutcomes(by_reason={"stop": 4000.0}, restarts=1.0, **known),
        "short": EngineOutcomes(by_reason={"stop": 3600.0}, **known),
        # 25 % hung in the engine: still "running", counted by no finished_reason (more
        # than any admitted maxErrorRate, so counted as failed they can never pass)
        "hung": EngineOutcomes(by_reason={"stop": 3000.0}, in_flight=1000.0, **known),
        "gauges unknown": EngineOutcomes(by_reason={"stop": served}, scraped=True),
    }.get(name, clean)
    return EngineOutcomePair(baseline=clean, candidate=candidate)


@cache
def server_step(name: str) -> ServerStepHistograms | MetricError | None:
    """Both engines' step-ITL histograms from the pool."""
    if name == "none":
        return None
    if name == "error":
        return MetricError("prometheus", "query timed out")
    if name == "empty":
        return ServerStepHistograms(StepHistogram(), StepHistogram())
    total, steps = (20.0, 20.0) if name == "thin" else (20_000.0, 4_000.0)
    step_count = None if name == "no-steps" else steps
    # no-steps: a candidate that would pass if every observation counted as a step (the
    # ~batch-size overcount of a look without vllm:iteration_tokens_total_count)
    candidate = {"better": _FAST, "worse": _SLOW, "no-steps": _FAST}.get(name, _BASE)
    return ServerStepHistograms(
        baseline=_histogram(_BASE, total, step_count),
        candidate=_histogram(candidate, total, step_count),
    )

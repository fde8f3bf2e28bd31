"""`spec.analysis.traffic`: where shadow requests come from and what they may cost.

Identical requests go to baseline and candidate; a cost cap bounds the GPU time spent on
requests nobody reads.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field
from pydantic.alias_generators import to_camel

from specdecode.api import rules as r
from specdecode.api.base import KubeModel, RuledModel, optional, section

# Re-exported: the wire spells it as the domain does (defined once, `vocabulary`).
from specdecode.vocabulary import TrafficSourceType as TrafficSourceType  # noqa: PLC0414


class ConfigMapKeyRef(KubeModel):
    """A key in a ConfigMap or Secret of the rollout's namespace."""

    name: str = Field(min_length=1, max_length=253, description="Object name.")
    key: str = Field(min_length=1, description="Key holding JSONL prompts.")


class LoadGeneratorSpec(KubeModel):
    """The shadow-load pods of Prompts traffic: sizing and what they may use.

    The operator sends no inference traffic itself. Each analysis stage gets load pods in
    the rollout's namespace (owned by the rollout, restricted Pod Security): one set per
    side, so the baseline's load never delays the candidate's timestamps. A pod runs
    several measuring processes; processes per side = expected chunks per second
    (concurrency / assumedStepSeconds, or requestRate x maxTokens) / chunksPerSecondPerProcess,
    rounded up. Too few show up as "shadow load saturated" (Inconclusive), never as a
    verdict: each process measures its own timestamp delay and reports it with every look.
    """

    image: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="Image with `specdecode-load`; default: the operator's own image.",
    )
    chunks_per_second_per_process: int = Field(
        default=2800,
        ge=100,
        le=1_000_000,
        description="Streamed chunks per second one measuring process is sized for. A "
        "process spends ~35 us of CPU per chunk (benchmarks/instrument.py: ~29,000 "
        "chunks/s per core), but one engine step delivers every stream's chunk at once, so "
        "the last of a burst of 28 is ~1 ms late: 2,800 = 28 streams at 10 ms steps.",
    )
    assumed_step_seconds: float = Field(
        default=0.01,
        gt=0,
        le=10,
        description="Shortest engine step expected: one chunk per stream per step.",
    )
    max_processes_per_pod: int = Field(
        default=4, ge=1, le=64, description="Measuring processes per load pod."
    )
    max_pods_per_side: int = Field(default=16, ge=1, le=256, description="Load pods per side.")
    cpu_per_process: str = Field(
        default="1",
        pattern=r"^[0-9]+(\.[0-9]+)?m?$",
        description="CPU request per measuring process. No CPU limit is set: throttling "
        "would delay the timestamps being taken.",
    )
    memory: str = Field(
        default="512Mi",
        pattern=r"^[0-9]+(Ki|Mi|Gi)?$",
        description="Memory request and limit per load pod (results are bounded sketches).",
    )
    block_seconds: int = Field(
        default=2,
        ge=1,
        le=60,
        description="Length of the time blocks results are kept in (the statistics' unit).",
    )


class SplitterSpec(KubeModel):
    """Mirror traffic with Splitter pairing: what the shadow splitter may hold and shed.

    The splitter streams at most `maxInFlight` mirrored requests (pairs: one to each side)
    at once; a request beyond that is shed (never queued) and counted on both sides as an
    arrival not sent. A look whose sheds exceed `maxShedFraction` of the window's arrivals
    is Inconclusive, never a pass: the shadows then saw less than the live load.
    """

    max_in_flight: int = Field(
        default=256,
        ge=1,
        le=1024,
        description="Mirrored requests (pairs) streaming at once before the splitter sheds. "
        "At most 1024, the splitter's open mirror connections. One event loop stamps every "
        "chunk: more streams need a whole core (cpu) and show as client delay if it lags.",
    )
    max_shed_fraction: float = Field(
        default=0.01,
        ge=0,
        le=0.1,
        description="Share of a look's mirrored arrivals the splitter may shed before the "
        "look's latency gates (TailLatency per chunk or token, Speedup) are Inconclusive "
        "(0: any shed request). The rest of the arrivals still reached both sides paired.",
    )
    cpu: str = Field(
        default="1",
        pattern=r"^[0-9]+(\.[0-9]+)?m?$",
        description="CPU request of the splitter pod (no limit: throttling would delay the "
        "stamps). One process: more than 1 is never used.",
    )


# The default per-request timeout: below the default stages' minDurationSeconds (60).
REQUEST_TIMEOUT_SECONDS = 45.0


class MirrorPairing(StrEnum):
    """How Mirror traffic's requests reach the shadows and what is measured of them."""

    # One RequestMirror toward the operator's splitter, which sends each request to both
    # shadows at once and times both streams as the load pods do: every gate is judged.
    SPLITTER = "Splitter"
    # One RequestMirror per shadow; only the engines' own metrics are judged.
    SERVER_SIDE = "ServerSide"


# Prompts-source fields without a default: setting one with Mirror traffic is a mistake.
PROMPTS_ONLY_FIELDS = (
    "config_map_ref",
    "secret_ref",
    "max_requests_per_stage",
    "max_output_tokens_per_stage",
)


def _source_is(source: TrafficSourceType) -> r.Expr:
    return r.Binary("==", r.at("source"), r.lit(source.value))


def server_side_mirror(traffic: r.Ref) -> r.Expr:
    """Whether the traffic at `traffic` (wire form) is Mirror with ServerSide pairing
    (an unset mirrorPairing is the default, Splitter)."""
    return r.all_of(
        r.Binary("==", traffic["source"], r.lit(TrafficSourceType.MIRROR.value)),
        r.Has(traffic["mirrorPairing"]),
        r.Binary("==", traffic["mirrorPairing"], r.lit(MirrorPairing.SERVER_SIDE.value)),
    )


def _prompts_only(field: str) -> r.Rule:
    wire = to_camel(field)
    return r.Rule(
        r.implies(_source_is(TrafficSourceType.MIRROR), r.Not(r.Has(r.at(wire)))),
        f"traffic: {wire} applies only to source Prompts (Mirror traffic is live; "
        "mirrorPercent bounds its cost)",
        f".{wire}",
        "FieldValueForbidden",
    )


# Which fields each source needs or forbids, written once (`rules`): TrafficSpec enforces
# them and the CRD carries them as CEL.
TRAFFIC_RULES = r.RuleSet(
    (
        r.Rule(
            r.not_both("configMapRef", "secretRef"),
            "traffic: set at most one of configMapRef and secretRef",
            ".secretRef",
            "FieldValueForbidden",
        ),
        r.Rule(
            r.implies(server_side_mirror(r.Ref("self")), r.Has(r.at("httpRoute"))),
            "traffic: source Mirror with mirrorPairing ServerSide needs httpRoute (a "
            "RequestMirror filter per shadow is the only way its requests arrive)",
            ".httpRoute",
            "FieldValueRequired",
        ),
        r.Rule(
            r.implies(_source_is(TrafficSourceType.PROMPTS), r.Not(r.Has(r.at("httpRoute")))),
            "traffic: httpRoute applies only to source Mirror",
            ".httpRoute",
            "FieldValueForbidden",
        ),
        *(_prompts_only(field) for field in PROMPTS_ONLY_FIELDS),
        r.Rule(
            r.implies(
                r.Has(r.at("splitter")),
                r.all_of(
                    _source_is(TrafficSourceType.MIRROR), r.Not(server_side_mirror(r.Ref("self")))
                ),
            ),
            "traffic: splitter applies only to source Mirror with mirrorPairing Splitter",
            ".splitter",
            "FieldValueForbidden",
        ),
    )
)


class TrafficSpec(RuledModel):
    """Shadow traffic: identical requests to baseline and candidate."""

    cross_field_rules = (TRAFFIC_RULES,)

    source: TrafficSourceType = Field(
        default=TrafficSourceType.PROMPTS,
        description="Prompts (the operator replays a prompt set) or Mirror (Gateway API "
        "RequestMirror of live traffic).",
    )
    config_map_ref: ConfigMapKeyRef | None = Field(
        default=None, description="JSONL prompts in a ConfigMap (Prompts source)."
    )
    secret_ref: ConfigMapKeyRef | None = Field(
        default=None, description="JSONL prompts in a Secret (Prompts source)."
    )
    builtin_workload: str = Field(
        default="chat",
        pattern="^(chat|code|rag|translation|math)$",
        description="Built-in synthetic prompt set when no prompts are referenced.",
    )
    max_tokens: int = Field(default=256, ge=1, le=32768, description="Default max_tokens.")
    temperature: float = Field(
        default=0.0,
        ge=0,
        le=2,
        description="Default sampling temperature for prompts that do not set one. Replay "
        "what production sends: acceptance falls as temperature rises.",
    )
    top_p: float = Field(
        default=1.0, gt=0, le=1, description="Default top_p for prompts that do not set one."
    )
    seed: int = Field(default=0, ge=0, description="Seed for prompt sampling.")
    request_timeout_seconds: float = Field(
        default=REQUEST_TIMEOUT_SECONDS,
        gt=0,
        description="Per request; a request still unfinished then is a failed one (timeout). "
        "Below every stage's minDurationSeconds (Prompts traffic), so a hung request "
        "counts before the stage can pass. Default 45: under the default stages' 60 s, and "
        "256 tokens at a slow 100 ms step take ~26 s.",
    )
    max_requests_per_stage: int | None = Field(
        default=None,
        ge=1,
        description="Shadow cost cap (Prompts source): requests per stage and engine.",
    )
    max_output_tokens_per_stage: int | None = Field(
        default=None,
        ge=1,
        description="Shadow cost cap (Prompts source): generated tokens per stage and engine "
        "(seconds are capped by each stage's maxDurationSeconds).",
    )
    load_generator: LoadGeneratorSpec = section(
        LoadGeneratorSpec, "Prompts source: the shadow-load pods that send and time the requests."
    )
    http_route: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description="Mirror source: the HTTPRoute (same namespace) whose rules send live "
        "traffic to the production Service. While a stage runs the operator adds a "
        "RequestMirror filter toward the splitter's Service (or, with mirrorPairing "
        "ServerSide, one toward each of the baseline and candidate Services) to those "
        "rules, and removes it when the analysis ends; it marks the route with the "
        "annotation specdecode.io/mirrors while its filter is there, and touches nothing "
        "else. A route already mirroring to the splitter with a filter the operator did "
        "not write is refused. Required with ServerSide pairing.",
    )
    mirror_percent: int = Field(
        default=10,
        ge=1,
        le=100,
        description="Mirror source: percent of the route's live requests copied (to the "
        "splitter, or to each shadow engine under ServerSide pairing).",
    )
    mirror_pairing: MirrorPairing = Field(
        default=MirrorPairing.SPLITTER,
        description="Mirror source: Splitter (the operator runs a splitter that receives "
        "one mirror, answers it at once, sends each request to baseline and candidate at "
        "the same instant and times both streams per chunk: every gate Prompts traffic "
        "allows is judged, client-side and paired; httpRoute is optional, since any mirror "
        "or tee can post to the splitter's Service) or ServerSide (a RequestMirror filter "
        "per shadow; only the engines' own metrics are judged).",
    )

    splitter: SplitterSpec | None = optional(
        "Mirror source with Splitter pairing: the splitter's in-flight cap, the "
        "shed share a look tolerates, its CPU (unset: the defaults).",
    )

    @property
    def splitter_settings(self) -> SplitterSpec:
        """The splitter's settings as set, else their defaults (defined once, above)."""
        return self.splitter or SplitterSpec()

    @property
    def server_side_mirror(self) -> bool:
        """Mirror traffic judged on the engines' metrics only (no responses reach us)."""
        return (
            self.source is TrafficSourceType.MIRROR
            and self.mirror_pairing is MirrorPairing.SERVER_SIDE
        )

    @property
    def splitter_mirror(self) -> bool:
        """Mirror traffic paired and timed by the operator's splitter."""
        return self.source is TrafficSourceType.MIRROR and not self.server_side_mirror

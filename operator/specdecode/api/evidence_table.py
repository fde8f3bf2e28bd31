"""The evidence table: for each gate type and traffic source, what is admitted and judged.

Why a table: admission (the CRD's CEL rules and the models' validators, `certify`'s
clauses built from it), judging (`certify`, called at every look) and the docs' gate table
(`tools/docgen.py`, `docs/gates.md`) read these rows, so what a gate reads, whether it can
certify a stage under a source, when it is skipped and the least data it decides on are
written once. The minimums quote `GATE_DEFAULTS` and `MIN_SAMPLES_DEFAULTS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdecode.api.gate_spec import GATE_DEFAULTS, MIN_SAMPLES_DEFAULTS, GateType
from specdecode.api.traffic import TrafficSourceType
from specdecode.vocabulary import ItlDefinition


@dataclass(frozen=True)
class Evidence:
    """One gate type under one traffic source.

    `itl`: the only ITL definition the source admits (unset is admitted: under Mirror it
    means ServerStep); None admits every one. `judged` False: admitted (the default stages
    carry the gate, and a CRD default cannot depend on the source) but reported as not
    judged, with `not_judged` as the reason, and never enforced.
    """

    reads: str
    minimum: str
    judged: bool = True
    not_judged: str = ""
    itl: tuple[ItlDefinition] | None = None
    admitted: bool = True


def _samples(gate_type: GateType, unit: str) -> str:
    return f"minSamples {unit} (default {MIN_SAMPLES_DEFAULTS[gate_type]})"


_P, _M = TrafficSourceType.PROMPTS, TrafficSourceType.MIRROR
_ACCEPTANCE_MIN = (
    f"minDraftTokens draft tokens (default {GATE_DEFAULTS['min_draft_tokens']}) and "
    + _samples(GateType.ACCEPTANCE, "finished requests")
)
_LENGTH_MIN = _samples(GateType.ACCEPTED_LENGTH, "finished requests")
_BLOCKS = "time blocks of loadGenerator.blockSeconds per side"
_STEPS = (
    "the engine steps the quantile's bound needs (and minSamples when set); without "
    "vllm:iteration_tokens_total_count, none"
)

EVIDENCE: dict[tuple[GateType, TrafficSourceType], Evidence] = {
    (GateType.ACCEPTANCE, _P): Evidence(
        "the candidate's vllm:spec_decode_num_draft_tokens / num_accepted_tokens counters, "
        "and the load pods' per-request accepted lengths",
        _ACCEPTANCE_MIN,
    ),
    (GateType.ACCEPTANCE, _M): Evidence(
        "the same counters, each request all-or-nothing, drafts per request bounded by "
        "vllm:request_generation_tokens",
        _ACCEPTANCE_MIN,
    ),
    (GateType.ACCEPTED_LENGTH, _P): Evidence(
        "the same counters and per-request accepted lengths", _LENGTH_MIN
    ),
    (GateType.ACCEPTED_LENGTH, _M): Evidence(
        "the same counters, bounded as for Acceptance under Mirror", _LENGTH_MIN
    ),
    (GateType.TAIL_LATENCY, _P): Evidence(
        "the load pods' chunk gaps per time block, open gaps of requests in flight "
        "(ServerStep: vLLM's inter-token-latency and iteration-tokens histograms)",
        _samples(GateType.TAIL_LATENCY, _BLOCKS) + "; ServerStep: " + _STEPS,
    ),
    (GateType.TAIL_LATENCY, _M): Evidence(
        "vLLM's inter-token-latency and iteration-tokens histograms (ServerStep only)",
        _STEPS,
        itl=(ItlDefinition.SERVER_STEP,),
    ),
    (GateType.SPEEDUP, _P): Evidence(
        "the load pods' time per output token per time block",
        _samples(GateType.SPEEDUP, _BLOCKS),
    ),
    (GateType.SPEEDUP, _M): Evidence(
        "nothing", "-", judged=False, not_judged="Mirror traffic has no client timings"
    ),
    (GateType.ERROR_RATE, _P): Evidence(
        "the load pods' request outcomes; a request in flight past requestTimeoutSeconds "
        "counts as failed",
        _samples(GateType.ERROR_RATE, "requests per side"),
    ),
    (GateType.ERROR_RATE, _M): Evidence(
        "vllm:request_success_total{finished_reason} and the running-requests gauges; "
        "requests the counters leave unaccounted never help a pass",
        _samples(GateType.ERROR_RATE, "mirrored requests per side"),
    ),
}

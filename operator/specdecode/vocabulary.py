"""The words the wire schema and the domain share: enums spelled as the CRD spells them,
and the few names and bounds both sides must agree on.

Why below `api`: the domain must not import the wire schema (so a second API version
cannot reach into it; import-linter holds it to that), yet a rollout's phase, a gate's
verdict or the action annotation's name are the same words on both sides. Re-exported
where `api` defined them; another wire spelling maps at the boundary. `GateType` is also
the gates' registry: `import_gate_modules` finds each type's module in a package from it.
"""

from __future__ import annotations

import importlib
import re
from enum import StrEnum
from types import ModuleType
from typing import Final

# What a gate's `methods` and the fingerprint call plain decoding (speculative unset).
NO_SPECULATION: Final = "none"

# The API group, and the one annotation users (and the kubectl plugin, and Argo CD
# actions) write to steer a rollout.
GROUP: Final = "specdecode.io"
ACTION_ANNOTATION: Final = f"{GROUP}/action"
ACTIONS: Final = ("promote", "abort", "retry")
# vLLM's per-batch-size schedule field of `--speculative-config`.
SCHEDULE: Final = "num_speculative_tokens_per_batch_size"
# Status bounds: the looks a stage run keeps, the traffic groups a stage reports.
MAX_LOOKS_KEPT: Final = 64  # a default stage takes 42 looks; older ones are dropped first
MAX_TRAFFIC_GROUPS: Final = 12  # domain.traffic_groups.MAX_GROUPS must equal it (a test checks)
# The evidence part of Mirror's pairing as resolved (`api.spec_evidence` hashes it,
# `domain.evidence` names it in a message).
MIRROR_PAIRING_PART: Final = "analysis.traffic.mirrorPairing"


class Phase(StrEnum):
    """Where the rollout is; see README.md for the transitions."""

    PENDING = "Pending"  # accepted, nothing deployed yet
    DEPLOYING = "Deploying"  # shadow Deployments starting; waiting for Ready
    ANALYZING = "Analyzing"  # a stage's shadow traffic and gates are running
    PAUSED = "Paused"  # gates passed; waiting for `specdecode.io/action: promote`
    PROMOTING = "Promoting"  # production rolling to the candidate config
    PROMOTED = "Promoted"  # production runs the desired config; steady state
    ROLLED_BACK = "RolledBack"  # analysis failed or aborted; production kept the stable config
    DEGRADED = "Degraded"  # production itself is not available
    FAILED = "Failed"  # the spec cannot be acted on (an error only the operator can see)


class StagePhase(StrEnum):
    """A stage's outcome."""

    PENDING = "Pending"
    WARMING_UP = "WarmingUp"
    RUNNING = "Running"
    SUCCESSFUL = "Successful"
    FAILED = "Failed"
    INCONCLUSIVE = "Inconclusive"


class ConditionStatus(StrEnum):
    """A condition's truth value, as metav1.ConditionStatus."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Evidence(StrEnum):
    """What a stage's verdicts rest on."""

    # the load pods' replayed prompts, timed per chunk by the operator's clients
    CLIENT_SIDE_REPLAYED = "ClientSideReplayed"
    # mirrored live requests, sent to both shadows at once and timed by the splitter
    CLIENT_SIDE_PAIRED = "ClientSidePaired"
    # the engines' own metrics only (Mirror traffic with mirrorPairing ServerSide)
    SERVER_SIDE = "ServerSide"


class DriftKind(StrEnum):
    """Which half of the guard found the drift."""

    ACCEPTANCE = "Acceptance"  # production's alpha below the Acceptance gate's minAlpha
    LATENCY = "Latency"  # production's step-ITL tail past the candidate's x (1 + tolerance)


class DriftAction(StrEnum):
    """What the operator does when production's acceptance drifted below the threshold."""

    ALERT = "Alert"  # Drifted condition, a Warning Event, the specdecode_drifted gauge
    ROLLBACK = "Rollback"  # the same, and production returns to the previous stable config
    # The same alert; production falls back to plain decoding while the promoted config is
    # analysed again against it (re-promoted if it still passes, kept off if it does not).
    REANALYZE = "Reanalyze"


class TrafficSourceType(StrEnum):
    """Where shadow requests come from."""

    PROMPTS = "Prompts"
    MIRROR = "Mirror"


class PromotionStrategy(StrEnum):
    """Who changes production once a config passed."""

    OWNED = "Owned"  # the operator owns production (`<name>`) and rolls it itself
    GITOPS = "GitOps"  # production is the source's owner's: the verdict carries the change
    PATCH = "Patch"  # the operator applies the speculative argument alone (own field manager)


class SpeculativeMethod(StrEnum):
    """Drafting methods of the supported vLLM releases (which release has which:
    `vllm_versions.METHODS`)."""

    EAGLE = "eagle"
    EAGLE3 = "eagle3"
    DRAFT_MODEL = "draft_model"
    MTP = "mtp"
    NGRAM = "ngram"
    SUFFIX = "suffix"
    NGRAM_GPU = "ngram_gpu"
    DFLASH = "dflash"
    DSPARK = "dspark"
    MEDUSA = "medusa"
    MLP_SPECULATOR = "mlp_speculator"


class ScheduleFallback(StrEnum):
    """What a latency rollback that passed at a lower concurrency does with its offer."""

    OFFER = "Offer"
    ANALYZE = "Analyze"


class AcceptanceBasis(StrEnum):
    """Where a group's estimate comes from."""

    STREAM = "Stream"  # tokens per streamed chunk (merged chunks bias it up)
    ENGINE = "Engine"  # the engine's per-request spec-decode metrics (vLLM >= 0.29)


class GateType(StrEnum):
    """What a gate measures."""

    ACCEPTANCE = "Acceptance"
    ACCEPTED_LENGTH = "AcceptedLength"
    TAIL_LATENCY = "TailLatency"
    SPEEDUP = "Speedup"
    ERROR_RATE = "ErrorRate"


def import_gate_modules(package: str) -> dict[GateType, ModuleType]:
    """Import `<package>.<gate_module_name>` for every `GateType` member, in its order: the
    enum is the registry a new gate adds a line to, and each module registers its type as it
    is imported (`api.gate_kinds`, `domain.gates`). A member without its module fails here,
    naming the file to write; an import failing inside a module propagates as it is."""
    modules = {}
    for gate_type in GateType:
        name = f"{package}.{gate_module_name(gate_type)}"
        try:
            modules[gate_type] = importlib.import_module(name)
        except ModuleNotFoundError as missing:
            if missing.name != name:
                raise
            raise ModuleNotFoundError(
                f"gate type {gate_type.value} has no module {name}: write "
                f'{name.replace(".", "/")}.py (CONTRIBUTING.md, "Adding a gate type")',
                name=name,
            ) from None
    return modules


def gate_module_name(gate_type: GateType) -> str:
    """The module a gate type's code is, in each package that has one per type: its value in
    snake case (`TailLatency` -> `tail_latency`)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", gate_type.value).lower()


class ItlDefinition(StrEnum):
    """Which inter-token latency a latency gate compares.

    PerChunk (the default) is the client's wall time between consecutive streamed chunks of
    a request, one chunk per engine step however many tokens it carries: the stall a reader
    of a streaming reply sees (what `vllm bench serve` calls ITL). PerToken divides each
    such gap by the tokens its chunk carried and weights it by them (a per-token pace; at
    the P99 it is the pace of the chunks that carried one token). Both are timed by the
    shadow load pods. ServerStep reads vLLM's own `inter_token_latency_seconds` histogram:
    the server's time between a request's consecutive steps, one observation per request
    per step, in coarse buckets; the only ITL there is when responses go elsewhere (Mirror).
    """

    PER_TOKEN = "PerToken"
    PER_CHUNK = "PerChunk"
    SERVER_STEP = "ServerStep"


class SpeedupMetric(StrEnum):
    """What a speedup gate compares between candidate and baseline."""

    TIME_PER_OUTPUT_TOKEN = "TimePerOutputToken"
    THROUGHPUT = "Throughput"


class GateVerdict(StrEnum):
    """One gate evaluation's outcome, as Argo Rollouts' AnalysisRun names them."""

    PENDING = "Pending"
    SUCCESSFUL = "Successful"
    FAILED = "Failed"
    INCONCLUSIVE = "Inconclusive"
    ERROR = "Error"

"""The MoE rows of the calibration table: published MoE measurements, the expert-reuse fit,
and the physics by load.

Published rows (`PUBLISHED_MOE`, quoted in calibration_moe_rows.py): each is predicted from
the steady-state step model (draft.seconds_per_output_token) at its batch size, TP, k and
acceptance length, so a row tests the step model (expert union, draft cost, overheads), not
the acceptance model.

The fit (`fit_expert_reuse`): Qwen3-30B-A3B's `expert_reuse` is the value on a 0.01 grid in
[0, 0.95] that minimises the worst |log(simulated / published speedup) - stack bias| over the
rows of the engine the simulator emulates (vLLM chains: AngelSlim's four H20 rows, k=2,
batch 1). The stack bias (`stack_bias`, -0.077) is the same log error on the dense Qwen3
rows of the same table and stack (`DENSE_CONTROL`: predicted 4-11 % low with no experts in
play), so the reuse explains only what is particular to the MoE rows. It gives 0.76
(`profiles.py`; a unit test re-runs the fit); the MoE rows are then predicted 4-10 % low,
like the dense ones. Fitted to the raw speedups (bias 0) the minimax would be 0.94; every
value in `admissible_reuse()` (0.45-0.95) keeps the four rows within +-20 %. Under the
uniform union (reuse 0) they are predicted 0.97-1.01x against 1.32-1.46x published. The
value is an effective one: it takes in all that makes vLLM's 3-token verify at batch 1
cheaper than three independent routings' bytes (routing locality of consecutive tokens, a
plain step that is partly latency-bound), fitted on one device, one k and batch 1.

Rows excluded, kept and printed with their reason (`PublishedMoeRow.excluded`): SpecForge
#339's SGLang EAGLE-3 chains on 2x H100 (0.72x at batch 1, 0.79x at batch 4). Both lie below
the uniform union's prediction (0.95x, 0.88x), the model's bound on bytes, so no reuse >= 0
reaches them; with the fitted reuse their sign is wrong (1.16x, 1.18x). The simulator has no
engine profiles, so they are judged against an SGLang overhead in this benchmark only
(`sglang_overhead_check`): one extra fixed cost per speculative step, fitted to the batch-1
row (3.6 ms at the fitted reuse), puts the held-out batch-4 row at 0.83x against 0.79x
published. Consistent with the gap being SGLang's per-step cost (its spec step at batch 1
takes 11.6 ms, 1.86 / 159.78 tok/s, where the model's takes 7.2 ms at reuse 0; its plain
batch scaling is below the uniform union's too; SGLang losses on Qwen3-30B-A3B also in
sglang#14824 and AngelSlim#163). But refitted
at reuse 0 (2.4 ms) the same check also passes (0.73x), so these rows cannot tell reuse apart:
they are excluded from the fit and from its done-when, not silently dropped.

The premise of a gain at one stream and a loss at eight (`stream_trend`): on GB10, EAGLE-3
k=3 at acceptance 1.86, the steady-state step model's speedup at 8 streams exceeds the one
at 1 stream for every reuse on the grid (0.74x / 0.91x at reuse 0, 1.23x / 1.29x fitted), so
no reuse gives that pair; it would take a cost that grows with the batch, which the published
GB10 chain rows of another engine do show (calibration_moe_rows.py: 1.46x -> 1.10x).

Physics rows (`MOE_METHODS`): Qwen3-30B-A3B on a GB10-class device (273 GB/s,
bandwidth-bound), chat, the same closed loop as `calibration.py --in-process` at 1, 8 and 32
streams; no published figures to compare.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from calibration_moe_rows import (
    DENSE_CONTROL,
    PUBLISHED_MOE,
    QWEN3_DENSE,
    SGLANG,
    VLLM,
    PublishedMoeRow,
)
from calibration_workloads import Engine

from specdecode_sim.acceptance import expected_tokens_per_step
from specdecode_sim.draft import seconds_per_output_token
from specdecode_sim.profiles import HARDWARE, MODELS

MOE_MODEL = "Qwen/Qwen3-30B-A3B"
MOE_GPU = "GB10"
MOE_STREAMS = (1, 8, 32)
MOE_METHODS: dict[str, Engine] = {
    label: Engine(label, MOE_MODEL, MOE_GPU, 1, config)
    for label, config in {
        "none": None,
        "n-gram k=3": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
        "EAGLE-3 k=3": {
            "method": "eagle3",
            "model": "AngelSlim/Qwen3-a3B_eagle3",
            "num_speculative_tokens": 3,
        },
    }.items()
}

# MT-bench answers: the decode context the rows are predicted at (short prompts).
PUBLISHED_CONTEXT_TOKENS = 512


def alpha_for_acceptance_length(acceptance_length: float, k: int) -> float:
    """Per-position acceptance a whose step law (1 - a^(k+1)) / (1 - a) gives the published
    mean acceptance length (bisection; the law rises monotonically in a)."""
    low, high = 0.0, 0.9999
    for _ in range(60):
        middle = (low + high) / 2
        if expected_tokens_per_step(middle, k) < acceptance_length:
            low = middle
        else:
            high = middle
    return low


def predicted_speedup(
    row: PublishedMoeRow, expert_reuse: float | None = None, extra_spec_step_s: float = 0.0
) -> float:
    """The simulator's steady-state speedup for a published row; `expert_reuse` replaces the
    model family's value (None: the profile's own, what the simulator runs with);
    `extra_spec_step_s` adds an engine's own fixed cost to every speculative step."""
    model = MODELS[row.model] if row.model in MODELS else QWEN3_DENSE[row.model]
    if expert_reuse is not None:
        model = dataclasses.replace(model, expert_reuse=expert_reuse)
    hardware = HARDWARE[row.gpu]
    if extra_spec_step_s:
        overhead = hardware.spec_step_overhead_s + extra_spec_step_s
        hardware = dataclasses.replace(hardware, spec_step_overhead_s=overhead)
    alpha = alpha_for_acceptance_length(row.acceptance_length, row.k)
    context = PUBLISHED_CONTEXT_TOKENS
    plain = seconds_per_output_token(hardware, model, row.tp, row.batch, context)
    spec = seconds_per_output_token(
        hardware, model, row.tp, row.batch, context, row.method, row.k, alpha
    )
    return plain / spec


FIT_GRID = tuple(step / 100 for step in range(96))
TOLERANCE = 0.20


def fitted_rows(model: str = "qwen3-30b-a3b") -> tuple[PublishedMoeRow, ...]:
    """The rows `expert_reuse` is fitted to: the model family's vLLM rows (the engine the
    simulator emulates); rows of other engines are predicted, not fitted."""
    return tuple(
        row
        for row in PUBLISHED_MOE
        if row.model == model and row.engine == VLLM and not row.excluded
    )


def excluded_rows() -> tuple[PublishedMoeRow, ...]:
    """Rows kept in the table that cannot judge the expert model (each says why)."""
    return tuple(row for row in PUBLISHED_MOE if row.excluded)


def sglang_overhead_check(expert_reuse: float | None = None) -> tuple[float, float, float]:
    """(extra SGLang seconds per speculative step fitted to the batch-1 row by bisection,
    the batch-4 row predicted with it, that row's published speedup) at this reuse."""
    fit_row, held_out = sorted(
        (row for row in PUBLISHED_MOE if row.engine == SGLANG), key=lambda row: row.batch
    )
    low, high = 0.0, 0.05
    for _ in range(50):
        middle = (low + high) / 2
        if predicted_speedup(fit_row, expert_reuse, middle) > fit_row.speedup:
            low = middle
        else:
            high = middle
    return low, predicted_speedup(held_out, expert_reuse, low), held_out.speedup


def stream_trend(expert_reuse: float, streams: tuple[int, ...] = (1, 8)) -> list[float]:
    """Steady-state EAGLE-3 k=3 speedup of Qwen3-30B-A3B on GB10 at acceptance 1.86 (the
    SpecForge rows' length, the GB10 curve's chain) for each stream count, at this reuse."""
    model = dataclasses.replace(MODELS["qwen3-30b-a3b"], expert_reuse=expert_reuse)
    hardware, alpha = HARDWARE[MOE_GPU], alpha_for_acceptance_length(1.86, 3)
    return [
        seconds_per_output_token(hardware, model, 1, n, 1024)
        / seconds_per_output_token(hardware, model, 1, n, 1024, "eagle3", 3, alpha)
        for n in streams
    ]


def reuse_giving_gain_at_one_and_loss_at_eight() -> list[float]:
    """The grid reuses whose GB10 curve (`stream_trend`) gains at 1 stream and loses at 8:
    the issue's held-out premise (empty: no reuse reaches it)."""
    reachable = []
    for reuse in FIT_GRID:
        one, eight = stream_trend(reuse)
        if one > 1.0 > eight:
            reachable.append(reuse)
    return reachable


def stack_bias(controls: Iterable[PublishedMoeRow] = DENSE_CONTROL) -> float:
    """Mean log(simulated / published speedup) of the dense rows on the fitted rows' stack:
    what the step model misses there with no experts in play (about -0.077, 7.4 % low)."""
    errors = [math.log(predicted_speedup(row) / row.speedup) for row in controls]
    return sum(errors) / len(errors)


def worst_log_error(rows: Iterable[PublishedMoeRow], expert_reuse: float, bias: float) -> float:
    """Largest |log(simulated / published speedup) - bias| over the rows at this reuse."""
    return max(
        abs(math.log(predicted_speedup(row, expert_reuse) / row.speedup) - bias) for row in rows
    )


def within_tolerance(row: PublishedMoeRow, expert_reuse: float | None = None) -> bool:
    """Simulated speedup within +-20 % of the published one, and on the same side of 1."""
    simulated = predicted_speedup(row, expert_reuse)
    same_sign = (simulated > 1.0) == (row.speedup > 1.0)
    return same_sign and abs(simulated / row.speedup - 1.0) <= TOLERANCE


def fit_expert_reuse(
    rows: tuple[PublishedMoeRow, ...] | None = None, bias: float | None = None
) -> float:
    """The grid reuse minimising the worst log error over the fitted rows once the dense
    rows' stack bias is taken out (minimax); `bias=0` fits the raw published speedups."""
    chosen = rows if rows is not None else fitted_rows()
    offset = stack_bias() if bias is None else bias
    return min(FIT_GRID, key=lambda reuse: worst_log_error(chosen, reuse, offset))


def admissible_reuse(rows: tuple[PublishedMoeRow, ...] | None = None) -> tuple[float, float]:
    """Lowest and highest grid reuse keeping every fitted row within +-20 % with its sign."""
    chosen = rows if rows is not None else fitted_rows()
    fitting = [r for r in FIT_GRID if all(within_tolerance(row, r) for row in chosen)]
    return (fitting[0], fitting[-1]) if fitting else (math.nan, math.nan)


__all__ = [
    "DENSE_CONTROL",
    "MOE_GPU",
    "MOE_METHODS",
    "MOE_MODEL",
    "MOE_STREAMS",
    "PUBLISHED_MOE",
    "PublishedMoeRow",
    "admissible_reuse",
    "excluded_rows",
    "fit_expert_reuse",
    "fitted_rows",
    "predicted_speedup",
    "reuse_giving_gain_at_one_and_loss_at_eight",
    "sglang_overhead_check",
    "stack_bias",
    "stream_trend",
    "within_tolerance",
]

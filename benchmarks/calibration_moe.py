"""The MoE rows of the calibration table: published MoE measurements, and the physics by load.

Published rows (`PUBLISHED_MOE`): every MoE speculative-decoding measurement read so far that
states model, hardware, batch size, k, acceptance length and both throughputs, quoted
exactly with its source. The simulator predicts each row from the steady-state step model
(draft.seconds_per_output_token) at the published batch size, k and acceptance length, so a
row tests the step model (expert union, draft cost, overheads), not the acceptance model.
Read but not added: rows that verify draft trees (SGLang topk > 1, the simulator verifies
chains), rows given per request rate rather than per batch size, and rows on hardware or
model shapes without a profile here (README of engine-image, "Not done").

Physics rows (`MOE_METHODS`): Qwen3-30B-A3B (128 experts, top-8, 48 MoE layers) on a
GB10-class device (273 GB/s, bandwidth-bound), chat, the same closed loop as
`calibration.py --in-process` at 1, 8 and 32 streams; no published figures to compare.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

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


@dataclass(frozen=True)
class PublishedMoeRow:
    """One published MoE measurement: the setup, both throughputs and where it was read."""

    label: str
    model: str
    gpu: str
    tp: int
    batch: int
    method: str
    k: int
    acceptance_length: float
    baseline_tok_s: float
    speculative_tok_s: float
    source: str

    @property
    def speedup(self) -> float:
        """Published speculative throughput over the published baseline."""
        return self.speculative_tok_s / self.baseline_tok_s


_SPECFORGE_339 = (
    'sgl-project/SpecForge issue #339, "Throughput degradation on Qwen3-30B-A3B with EAGLE3" '
    "(https://github.com/sgl-project/SpecForge/issues/339): SGLang bench_eagle3.py, mtbench:20, "
    "--tp-size 2 on 2x H100, bf16, draft zhuyksir/EAGLE3-Qwen3-30B-A3B-DenseHead; quoted: "
)

PUBLISHED_MOE: tuple[PublishedMoeRow, ...] = (
    PublishedMoeRow(
        "Qwen3-30B-A3B / 2x H100 bs 1",
        "qwen3-30b-a3b",
        "H100",
        2,
        1,
        "eagle3",
        3,
        1.86,
        222.47,
        159.78,
        _SPECFORGE_339 + '"bs 1 | throughput 222.47" and "bs 1 | steps 3 | topk 1 | num_draft 4 '
        '| throughput 159.78 | acc len 1.86"',
    ),
    PublishedMoeRow(
        "Qwen3-30B-A3B / 2x H100 bs 4",
        "qwen3-30b-a3b",
        "H100",
        2,
        4,
        "eagle3",
        3,
        1.86,
        566.21,
        447.90,
        _SPECFORGE_339 + '"bs 4 | throughput 566.21" and "bs 4 | steps 3 | topk 1 | num_draft 4 '
        '| throughput 447.90 | acc len 1.86"',
    ),
)


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


def predicted_speedup(row: PublishedMoeRow, expert_reuse: float | None = None) -> float:
    """The simulator's steady-state speedup for a published row; `expert_reuse` replaces the
    model family's value (None: the profile's own, what the simulator runs with)."""
    model = MODELS[row.model]
    if expert_reuse is not None:
        model = dataclasses.replace(model, expert_reuse=expert_reuse)
    hardware = HARDWARE[row.gpu]
    alpha = alpha_for_acceptance_length(row.acceptance_length, row.k)
    context = PUBLISHED_CONTEXT_TOKENS
    plain = seconds_per_output_token(hardware, model, row.tp, row.batch, context)
    spec = seconds_per_output_token(
        hardware, model, row.tp, row.batch, context, row.method, row.k, alpha
    )
    return plain / spec

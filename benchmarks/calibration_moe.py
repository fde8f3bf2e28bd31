"""The MoE rows of the calibration table: one MoE model's speculative speedup by load.

No published side-by-side study covers an MoE model, so these rows show the simulator's
physics, not a fit: Qwen3-30B-A3B (128 experts, top-8, 48 MoE layers) on a GB10-class device
(273 GB/s, bandwidth-bound), chat, the same closed loop as `calibration.py --in-process` at
1, 8 and 32 streams. Each step reads the expected union of its tokens' experts, E (1 - (1 -
k/E)^T) per MoE layer (engine-image/specdecode_sim/steptime.py, sources there): a verify of
k+1 tokens per sequence reads up to k+1 times the experts of a plain step at one stream,
and hardly more once the plain batch already reads them all.
"""

from __future__ import annotations

from calibration_workloads import Engine

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
